package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
)

// Authorizer decides from the request alone, in the spirit of Kubernetes' RBAC
// defaults plus its node authorizer:
//
//   - system:masters may do anything;
//   - every authenticated user may read discovery, /openapi, /version and the health
//     endpoints, and everyone but bootstrappers /metrics;
//   - a node (system:node:<name> in system:nodes) may read nodes, pods, services,
//     endpoints, endpointslices and namespaces; get the Secrets and ConfigMaps that
//     pods bound to it reference, and list or watch them one name at a time
//     (fieldSelector=metadata.name=NAME), as Kubernetes' node authorizer allows, with
//     the pods read from Pods at each request; create its Node and write its own Node
//     and its status; create and write its own Lease in kube-node-lease; write the
//     status of pods and delete pods (NodeRestriction checks they are bound to it);
//     create mirror pods of its static pods (NodeRestriction checks the rest);
//     create and update events (NodeRestriction checks they are about it); and
//     request a client certificate (the handler checks it is for itself);
//   - a bootstrapper (system:bootstrap:<id>) may only request a node certificate.
//
// Writes whose target is not in the URL (creates) are allowed here and checked with
// the object by NodeRestriction.
type Authorizer struct {
	// Pods finds the pods bound to a node, and may be a cache that lags (PodIndex);
	// nil refuses nodes every Secret and ConfigMap.
	Pods NodePods
	// LivePods, when set, is asked when Pods finds no pod referencing the object, so a
	// pod bound a moment ago counts before a cache sees it (ObjectsNodePods).
	LivePods NodePods
}

var _ apiserver.Authorizer = Authorizer{}

// Authorize implements apiserver.Authorizer.
func (z Authorizer) Authorize(ctx context.Context, a apiserver.Attributes) (bool, string) {
	if a.User.InGroup(mastersGroup) {
		return true, ""
	}
	if !a.ResourceRequest() {
		return authorizeNonResource(a)
	}
	if node, ok := nodeNameOf(a.User); ok {
		return z.authorizeNode(ctx, node, a)
	}
	if isBootstrapper(a.User) {
		if a.Group == authapi.Group && a.Resource == authapi.NodeCertificateRequestsResource && a.Verb == "create" {
			return true, ""
		}
		return false, "a bootstrap token may only request a node certificate (plinthctl join)"
	}
	return false, fmt.Sprintf("%s is neither in %s, a node (system:node:<name> in %s) nor a bootstrapper, and only those have permissions",
		a.User.Name, mastersGroup, authapi.NodesGroup)
}

// authorizeNonResource handles paths that name no resource. Resource paths are decided
// with their resource; they pass here should a caller ask anyway.
func authorizeNonResource(a apiserver.Attributes) (bool, string) {
	path := strings.TrimSuffix(a.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	read := a.Verb == "get" || a.Verb == "head"
	switch {
	case parts[0] == "api" && len(parts) >= 3, parts[0] == "apis" && len(parts) >= 4:
		return true, ""
	case !read:
		return false, "only get is allowed on paths that name no resource"
	case parts[0] == "api" || parts[0] == "apis": // discovery
		return true, ""
	case path == "/version", parts[0] == "healthz", parts[0] == "livez", parts[0] == "readyz",
		parts[0] == "openapi":
		return true, ""
	case path == "/metrics":
		if isBootstrapper(a.User) {
			return false, "a bootstrap token may only request a node certificate and read discovery"
		}
		return true, ""
	}
	return false, "no rule allows this path"
}

// nodeReadable are the resources a node reads to run its pods and Services.
var nodeReadable = map[string]bool{
	"/nodes": true, "/pods": true, "/services": true, "/endpoints": true, "/namespaces": true,
	"discovery.k8s.io/endpointslices": true,
}

func isRead(verb string) bool { return verb == "get" || verb == "list" || verb == "watch" }

func (z Authorizer) authorizeNode(ctx context.Context, node string, a apiserver.Attributes) (bool, string) {
	gr := a.Group + "/" + a.Resource
	own := a.Name == node
	switch {
	case a.Subresource == "" && isRead(a.Verb) && nodeReadable[gr]:
		return true, ""
	case gr == "/secrets" && a.Subresource == "":
		return z.authorizeReferenced(ctx, node, secretReference, a)
	case gr == "/configmaps" && a.Subresource == "":
		return z.authorizeReferenced(ctx, node, configMapReference, a)

	case gr == "/nodes" && a.Subresource == "" && a.Verb == "create":
		return true, "" // the name is in the body: NodeRestriction checks it
	case gr == "/nodes" && (a.Subresource == "" || a.Subresource == "status"):
		switch a.Verb {
		case "get", "update", "patch", "delete":
			if own {
				return true, ""
			}
			return false, fmt.Sprintf("node %s may only %s its own Node, not %q", node, a.Verb, a.Name)
		}

	case gr == "coordination.k8s.io/leases" && a.Subresource == "":
		if a.Namespace != nodeLeaseNamespace {
			return false, fmt.Sprintf("node %s may only use its Lease in namespace %s", node, nodeLeaseNamespace)
		}
		switch a.Verb {
		case "create":
			return true, "" // NodeRestriction checks the name in the body
		case "get", "update", "patch", "delete":
			if own {
				return true, ""
			}
			return false, fmt.Sprintf("node %s may only %s its own Lease, not %q", node, a.Verb, a.Name)
		}

	case gr == "/pods" && a.Subresource == "status" && (a.Verb == "get" || a.Verb == "update" || a.Verb == "patch"),
		gr == "/pods" && a.Subresource == "" && a.Verb == "delete",
		// Mirror pods of the node's static pods; NodeRestriction admits only those.
		gr == "/pods" && a.Subresource == "" && a.Verb == "create",
		// plinthd evicts its own pods under node pressure.
		gr == "/pods" && a.Subresource == "eviction" && a.Verb == "create":
		return true, "" // NodeRestriction checks the pod is bound to this node

	case (gr == "/events" || gr == "events.k8s.io/events") && a.Subresource == "" &&
		(a.Verb == "create" || a.Verb == "update" || a.Verb == "patch"):
		return true, "" // NodeRestriction checks the event is about this node or its pods

	case a.Group == authapi.Group && a.Resource == authapi.NodeCertificateRequestsResource && a.Verb == "create":
		return true, "" // the handler checks the certificate is for this node
	}
	return false, fmt.Sprintf("nodes may not %s %s", a.Verb, describeResource(a))
}

func describeResource(a apiserver.Attributes) string {
	s := a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	return s
}
