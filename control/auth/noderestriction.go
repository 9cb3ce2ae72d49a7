package auth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth/plinth/control/apiserver"
)

// restrictedLabelDomain is the label prefix only administrators may set on nodes, so
// that workloads can be steered by labels a compromised node cannot give itself.
const restrictedLabelDomain = "node-restriction.kubernetes.io"

// PodGetter reads a stored pod; NodeRestriction uses it to check that the pod an event
// is about is bound to the node writing it.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// ObjectsPodGetter reads pods through the API server's stored objects
// (apiserver.Server.Objects of the pods resource).
func ObjectsPodGetter(pods apiserver.Objects) PodGetter { return objectsPodGetter{pods} }

type objectsPodGetter struct{ objs apiserver.Objects }

func (g objectsPodGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := g.objs.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("stored pod %s/%s is a %T", namespace, name, obj)
	}
	return pod, nil
}

// NodeRestriction admits writes by nodes after looking at the objects, following
// Kubernetes' NodeRestriction admission plugin: a node may create and change only its
// own Node (not its taints, nor labels under node-restriction.kubernetes.io/) and its
// own Lease, create only mirror pods of its static pods, change the status of and
// delete only pods bound to it, and write only events about itself or its pods. Other
// users pass through.
type NodeRestriction struct {
	// Pods looks up the pod an event is about; nil refuses events about pods.
	Pods PodGetter
	// Nodes looks up the Node a mirror pod's owner reference names, to check its UID;
	// nil refuses mirror pods that carry an owner reference.
	Nodes NodeGetter
}

// NodeGetter reads a stored Node.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// ObjectsNodeGetter reads Nodes through the API server's stored objects
// (apiserver.Server.Objects of the nodes resource).
func ObjectsNodeGetter(nodes apiserver.Objects) NodeGetter { return objectsNodeGetter{nodes} }

type objectsNodeGetter struct{ objs apiserver.Objects }

func (g objectsNodeGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	obj, err := g.objs.Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("stored node %s is a %T", name, obj)
	}
	return n, nil
}

var _ apiserver.Admitter = (*NodeRestriction)(nil)

// Admit implements apiserver.Admitter.
func (r *NodeRestriction) Admit(ctx context.Context, a apiserver.Attributes, obj, old runtime.Object) error {
	node, ok := nodeNameOf(a.User)
	if !ok {
		return nil
	}
	var err error
	switch a.Group + "/" + a.Resource {
	case "/nodes":
		err = admitNode(node, obj, old)
	case "coordination.k8s.io/leases":
		err = admitLease(node, obj, old)
	case "/pods":
		err = r.admitPod(ctx, node, a, obj, old)
	case "/events", "events.k8s.io/events":
		err = r.admitEvent(ctx, node, obj, old)
	default:
		// The authorizer lets nodes write nothing else; refuse in case it ever does.
		err = fmt.Errorf("node %s may not write %s", node, describeResource(a))
	}
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, a.Name, err)
}

func admitNode(node string, obj, old runtime.Object) error {
	n, _ := obj.(*corev1.Node)
	o, _ := old.(*corev1.Node)
	switch {
	case n == nil && o == nil:
		return fmt.Errorf("expected a Node, got %T", obj)
	case n != nil && n.Name != node:
		return fmt.Errorf("node %s may not create or change Node %q", node, n.Name)
	case o != nil && o.Name != node:
		return fmt.Errorf("node %s may not change Node %q", node, o.Name)
	case n == nil: // delete of its own Node
		return nil
	}
	var oldLabels map[string]string
	if o != nil {
		oldLabels = o.Labels
	}
	if changed := changedRestrictedLabels(n.Labels, oldLabels); len(changed) > 0 {
		return fmt.Errorf("node %s may not set or change labels under %s/ on itself: %s (an administrator sets those)",
			node, restrictedLabelDomain, strings.Join(changed, ", "))
	}
	// Pod CIDRs come from the control service's node IPAM (or an administrator); a
	// node setting its own could take addresses another node's pods use.
	if o == nil && (n.Spec.PodCIDR != "" || len(n.Spec.PodCIDRs) > 0) {
		return fmt.Errorf("node %s may not set its own spec.podCIDR or spec.podCIDRs (the control service assigns them)", node)
	}
	if o != nil && (n.Spec.PodCIDR != o.Spec.PodCIDR || !slices.Equal(n.Spec.PodCIDRs, o.Spec.PodCIDRs)) {
		return fmt.Errorf("node %s may not change its own spec.podCIDR or spec.podCIDRs", node)
	}
	// At registration a node brings its taints; afterwards it may not drop the ones an
	// administrator added to keep workloads away.
	if o != nil && !apiequality.Semantic.DeepEqual(n.Spec.Taints, o.Spec.Taints) {
		return fmt.Errorf("node %s may not change its own taints", node)
	}
	return nil
}

// changedRestrictedLabels lists the restricted label keys that differ between the new
// and old label sets (added, removed or changed), sorted.
func changedRestrictedLabels(labels, old map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if isRestrictedLabel(k) {
			if ov, ok := old[k]; !ok || ov != labels[k] {
				out = append(out, k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, ok := labels[k]; !ok && isRestrictedLabel(k) {
			out = append(out, k)
		}
	}
	return out
}

// isRestrictedLabel reports whether key's prefix is node-restriction.kubernetes.io or a
// subdomain of it.
func isRestrictedLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	prefix = strings.ToLower(prefix)
	return prefix == restrictedLabelDomain || strings.HasSuffix(prefix, "."+restrictedLabelDomain)
}

func admitLease(node string, obj, old runtime.Object) error {
	for _, x := range []runtime.Object{obj, old} {
		if x == nil {
			continue
		}
		l, ok := x.(*coordinationv1.Lease)
		if !ok {
			return fmt.Errorf("expected a Lease, got %T", x)
		}
		if l.Namespace != nodeLeaseNamespace || l.Name != node {
			return fmt.Errorf("node %s may only write its own Lease %s/%s, not %s/%s", node, nodeLeaseNamespace, node, l.Namespace, l.Name)
		}
	}
	return nil
}

func (r *NodeRestriction) admitPod(ctx context.Context, node string, a apiserver.Attributes, obj, old runtime.Object) error {
	if old == nil {
		return r.admitMirrorPodCreate(ctx, node, obj)
	}
	if a.Subresource != "status" && obj != nil {
		return fmt.Errorf("node %s may change only the status of pods", node)
	}
	p, ok := old.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expected a Pod, got %T", old)
	}
	if p.Spec.NodeName != node {
		bound := p.Spec.NodeName
		if bound == "" {
			bound = "no node"
		}
		return fmt.Errorf("node %s may only change pods bound to it; pod %s/%s is bound to %s", node, p.Namespace, p.Name, bound)
	}
	return nil
}

func (r *NodeRestriction) admitEvent(ctx context.Context, node string, obj, old runtime.Object) error {
	if obj == nil {
		return fmt.Errorf("node %s may not delete events", node)
	}
	for _, x := range []runtime.Object{obj, old} {
		if x == nil {
			continue
		}
		ref, err := eventSubject(x)
		if err != nil {
			return err
		}
		if err := r.aboutNode(ctx, node, ref); err != nil {
			return err
		}
	}
	return nil
}

// eventSubject returns what an event is about: involvedObject for core/v1, regarding
// for events.k8s.io/v1.
func eventSubject(obj runtime.Object) (corev1.ObjectReference, error) {
	switch e := obj.(type) {
	case *corev1.Event:
		return e.InvolvedObject, nil
	case *eventsv1.Event:
		return e.Regarding, nil
	}
	return corev1.ObjectReference{}, fmt.Errorf("expected an Event, got %T", obj)
}

func (r *NodeRestriction) aboutNode(ctx context.Context, node string, ref corev1.ObjectReference) error {
	switch ref.Kind {
	case "Node":
		if ref.Name == node {
			return nil
		}
		return fmt.Errorf("node %s may only write events about itself or its pods, not about Node %q", node, ref.Name)
	case "Pod":
		if r.Pods == nil {
			return fmt.Errorf("node %s may not write events about pods here: the control service cannot look pods up", node)
		}
		pod, err := r.Pods.GetPod(ctx, ref.Namespace, ref.Name)
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s may not write events about pod %s/%s: it does not exist", node, ref.Namespace, ref.Name)
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("look up pod %s/%s for an event: %w", ref.Namespace, ref.Name, err))
		}
		if pod.Spec.NodeName != node {
			return fmt.Errorf("node %s may only write events about pods bound to it; pod %s/%s is not", node, ref.Namespace, ref.Name)
		}
		return nil
	}
	return fmt.Errorf("node %s may only write events about itself or its pods, not about %s %q", node, ref.Kind, ref.Name)
}
