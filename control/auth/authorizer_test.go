package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/plinth/plinth/control/apiserver"
)

var (
	admin        = apiserver.User{Name: "plinth-admin", Groups: []string{"system:masters", "system:authenticated"}}
	controlSelf  = apiserver.User{Name: "system:plinth-control", Groups: []string{"system:masters", "system:authenticated"}}
	nodeA        = apiserver.User{Name: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"}}
	bootstrapper = apiserver.User{Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:authenticated"}}
	stranger     = apiserver.User{Name: "jane", Groups: []string{"system:authenticated"}}
	// Either half of a node identity alone is not a node.
	nameOnly  = apiserver.User{Name: "system:node:node-a", Groups: []string{"system:authenticated"}}
	groupOnly = apiserver.User{Name: "jane", Groups: []string{"system:nodes", "system:authenticated"}}
)

func res(u apiserver.User, verb, group, resource, sub, ns, name string) apiserver.Attributes {
	return apiserver.Attributes{User: u, Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func path(u apiserver.User, verb, p string) apiserver.Attributes {
	return apiserver.Attributes{User: u, Verb: verb, Path: p}
}

func TestAuthorizer(t *testing.T) {
	cases := []struct {
		name   string
		a      apiserver.Attributes
		allow  bool
		reason string // a substring of the refusal
	}{
		{"masters may do anything", res(admin, "delete", "", "nodes", "", "", "node-b"), true, ""},
		{"the control service is a master", res(controlSelf, "update", "", "pods", "status", "default", "p"), true, ""},
		{"masters manage tokens", res(admin, "create", "plinth.dev", "bootstraptokens", "", "", ""), true, ""},
		{"masters read pod logs", res(admin, "get", "", "pods", "log", "default", "p"), true, ""},
		{"a node may not read pod logs", res(nodeA, "get", "", "pods", "log", "default", "p"), false, "nodes may not get pods/log"},
		{"a stranger may not read pod logs", res(stranger, "get", "", "pods", "log", "default", "p"), false, "neither"},

		{"node reads nodes", res(nodeA, "list", "", "nodes", "", "", ""), true, ""},
		{"node watches pods", res(nodeA, "watch", "", "pods", "", "", ""), true, ""},
		{"node reads services", res(nodeA, "list", "", "services", "", "", ""), true, ""},
		{"node reads endpointslices", res(nodeA, "watch", "discovery.k8s.io", "endpointslices", "", "", ""), true, ""},
		{"node reads namespaces", res(nodeA, "get", "", "namespaces", "", "", "default"), true, ""},
		{"node creates a Node (name checked in admission)", res(nodeA, "create", "", "nodes", "", "", ""), true, ""},
		{"node updates its own Node", res(nodeA, "update", "", "nodes", "", "", "node-a"), true, ""},
		{"node patches its own status", res(nodeA, "patch", "", "nodes", "status", "", "node-a"), true, ""},
		{"node updates its own status", res(nodeA, "update", "", "nodes", "status", "", "node-a"), true, ""},
		{"node may not update node B", res(nodeA, "update", "", "nodes", "", "", "node-b"), false, `may only update its own Node, not "node-b"`},
		{"node may not patch node B's status", res(nodeA, "patch", "", "nodes", "status", "", "node-b"), false, "its own Node"},
		{"node may not delete node B", res(nodeA, "delete", "", "nodes", "", "", "node-b"), false, "its own Node"},
		{"node may not delete all nodes", res(nodeA, "deletecollection", "", "nodes", "", "", ""), false, "nodes may not deletecollection nodes"},

		{"node gets its own Lease", res(nodeA, "get", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-a"), true, ""},
		{"node creates its Lease", res(nodeA, "create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), true, ""},
		{"node updates its own Lease", res(nodeA, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-a"), true, ""},
		{"node may not update node B's Lease", res(nodeA, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-b"), false, "its own Lease"},
		{"node may not use Leases elsewhere", res(nodeA, "create", "coordination.k8s.io", "leases", "", "kube-system", ""), false, "kube-node-lease"},
		{"node may not list Leases", res(nodeA, "list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), false, "nodes may not list"},

		{"node updates pod status (binding checked in admission)", res(nodeA, "update", "", "pods", "status", "default", "p"), true, ""},
		{"node deletes a pod (binding checked in admission)", res(nodeA, "delete", "", "pods", "", "default", "p"), true, ""},
		{"node evicts a pod under pressure (binding checked in admission)", res(nodeA, "create", "", "pods", "eviction", "default", "p"), true, ""},
		{"node may not update a pod's spec", res(nodeA, "update", "", "pods", "", "default", "p"), false, "nodes may not update pods"},
		{"node creates a pod (only a mirror pod of its own, checked in admission)", res(nodeA, "create", "", "pods", "", "default", ""), true, ""},
		{"node may not bind pods", res(nodeA, "create", "", "pods", "binding", "default", "p"), false, "pods/binding"},
		{"node creates events", res(nodeA, "create", "", "events", "", "default", ""), true, ""},
		{"node patches events.k8s.io events", res(nodeA, "patch", "events.k8s.io", "events", "", "default", "e"), true, ""},
		{"node may not delete events", res(nodeA, "delete", "", "events", "", "default", "e"), false, "nodes may not delete events"},
		{"node may not write services", res(nodeA, "update", "", "services", "", "default", "s"), false, "nodes may not update services"},
		{"without pods to look at, node may not read secrets", res(nodeA, "get", "", "secrets", "", "default", "s"), false, "cannot look up its pods"},
		{"node renews its certificate", res(nodeA, "create", "plinth.dev", "nodecertificaterequests", "", "", ""), true, ""},
		{"node may not create tokens", res(nodeA, "create", "plinth.dev", "bootstraptokens", "", "", ""), false, "bootstraptokens.plinth.dev"},

		{"bootstrapper requests a node certificate", res(bootstrapper, "create", "plinth.dev", "nodecertificaterequests", "", "", ""), true, ""},
		{"bootstrapper may not list nodes", res(bootstrapper, "list", "", "nodes", "", "", ""), false, "only request a node certificate"},
		{"bootstrapper may not list tokens", res(bootstrapper, "list", "plinth.dev", "bootstraptokens", "", "", ""), false, "only request a node certificate"},
		{"bootstrapper reads discovery", path(bootstrapper, "get", "/apis"), true, ""},
		{"bootstrapper reads /version", path(bootstrapper, "get", "/version"), true, ""},
		{"bootstrapper may not read /metrics", path(bootstrapper, "get", "/metrics"), false, "bootstrap token"},

		{"a name without the group is not a node", res(nameOnly, "get", "", "nodes", "", "", "node-a"), false, "only those have permissions"},
		{"the group without the name is not a node", res(groupOnly, "get", "", "nodes", "", "", "node-a"), false, "only those have permissions"},
		{"strangers get nothing", res(stranger, "list", "", "pods", "", "", ""), false, "jane is neither"},

		{"anyone reads /healthz", path(stranger, "get", "/healthz"), true, ""},
		{"anyone reads /readyz", path(stranger, "get", "/readyz"), true, ""},
		{"anyone reads one readiness check", path(stranger, "get", "/readyz/etcd"), true, ""},
		{"anyone reads /livez", path(stranger, "get", "/livez"), true, ""},
		{"anyone reads /metrics", path(stranger, "get", "/metrics"), true, ""},
		{"anyone reads discovery", path(stranger, "get", "/api/v1"), true, ""},
		{"anyone reads group discovery", path(stranger, "get", "/apis/coordination.k8s.io/v1"), true, ""},
		{"anyone reads openapi", path(stranger, "get", "/openapi/v3/api/v1"), true, ""},
		{"resource paths are decided with their resource", path(stranger, "post", "/api/v1/namespaces/default/pods"), true, ""},
		{"no writes to discovery", path(stranger, "post", "/apis"), false, "only get"},
		{"unknown paths are refused", path(stranger, "get", "/debug/pprof"), false, "no rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed, reason := Authorizer{}.Authorize(context.Background(), c.a)
			if allowed != c.allow {
				t.Fatalf("Authorize(%+v) = %v (%q), want %v", c.a, allowed, reason, c.allow)
			}
			if !allowed && (reason == "" || !strings.Contains(reason, c.reason)) {
				t.Fatalf("reason %q does not mention %q", reason, c.reason)
			}
		})
	}
}
