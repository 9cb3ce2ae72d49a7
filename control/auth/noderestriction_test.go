package auth

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type fakePods map[string]*corev1.Pod

func (f fakePods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := f[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(ns, name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: nodeName}}
}

func lease(ns, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func event(kind, ns, name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "e"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name},
	}
}

func TestNodeRestriction(t *testing.T) {
	pods := fakePods{
		"default/mine":   pod("default", "mine", "node-a"),
		"default/theirs": pod("default", "theirs", "node-b"),
	}
	r := &NodeRestriction{Pods: pods}
	noisy := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	type tc struct {
		name     string
		verb     string
		group    string
		resource string
		sub      string
		obj, old runtime.Object
		deny     string
	}
	restricted := map[string]string{"node-restriction.kubernetes.io/pool": "gold"}
	tests := []tc{
		{"registers itself", "create", "", "nodes", "", node("node-a", map[string]string{"kubernetes.io/hostname": "node-a"}, noisy), nil, ""},
		{"evicts a pod bound to it", "create", "", "pods", "eviction", nil, pod("default", "mine", "node-a"), ""},
		{"may not evict node B's pod", "create", "", "pods", "eviction", nil, pod("default", "theirs", "node-b"), "bound to node-b"},
		{"may not register node B", "create", "", "nodes", "", node("node-b", nil), nil, `may not create or change Node "node-b"`},
		{"may not register with restricted labels", "create", "", "nodes", "", node("node-a", restricted), nil, "node-restriction.kubernetes.io/pool"},
		{"may not register with a restricted subdomain label", "create", "", "nodes", "",
			node("node-a", map[string]string{"a.node-restriction.kubernetes.io/x": "y"}), nil, "a.node-restriction.kubernetes.io/x"},
		{"may set ordinary labels on itself", "update", "", "nodes", "",
			node("node-a", map[string]string{"team": "x"}), node("node-a", nil), ""},
		{"may not add restricted labels on itself", "patch", "", "nodes", "", node("node-a", restricted), node("node-a", nil), "may not set or change labels under node-restriction.kubernetes.io/"},
		{"may not remove restricted labels from itself", "update", "", "nodes", "", node("node-a", nil), node("node-a", restricted), "node-restriction.kubernetes.io/pool"},
		{"may not change restricted labels on itself", "update", "", "nodes", "",
			node("node-a", map[string]string{"node-restriction.kubernetes.io/pool": "silver"}), node("node-a", restricted), "node-restriction.kubernetes.io/pool"},
		{"keeps restricted labels an admin set", "update", "", "nodes", "",
			node("node-a", map[string]string{"node-restriction.kubernetes.io/pool": "gold", "team": "y"}), node("node-a", restricted), ""},
		{"a look-alike prefix is not restricted", "update", "", "nodes", "",
			node("node-a", map[string]string{"xnode-restriction.kubernetes.io/a": "b"}), node("node-a", nil), ""},
		{"may not register with a pod CIDR", "create", "", "nodes", "", withPodCIDR(node("node-a", nil), "10.244.9.0/24"), nil, "may not set its own spec.podCIDR"},
		{"may not change its pod CIDR", "update", "", "nodes", "", withPodCIDR(node("node-a", nil), "10.244.9.0/24"), withPodCIDR(node("node-a", nil), "10.244.1.0/24"), "may not change its own spec.podCIDR"},
		{"may not give itself a pod CIDR", "update", "", "nodes", "", withPodCIDR(node("node-a", nil), "10.244.9.0/24"), node("node-a", nil), "may not change its own spec.podCIDR"},
		{"keeps the pod CIDR it was given", "update", "", "nodes", "", withPodCIDR(node("node-a", map[string]string{"team": "z"}), "10.244.1.0/24"), withPodCIDR(node("node-a", nil), "10.244.1.0/24"), ""},
		{"may not drop its taints", "update", "", "nodes", "", node("node-a", nil), node("node-a", nil, noisy), "may not change its own taints"},
		{"updates its own status", "update", "", "nodes", "status", node("node-a", nil, noisy), node("node-a", nil, noisy), ""},
		{"may not update node B", "update", "", "nodes", "", node("node-b", nil), node("node-b", nil), "node-b"},
		{"deletes itself", "delete", "", "nodes", "", nil, node("node-a", nil), ""},
		{"may not delete node B", "delete", "", "nodes", "", nil, node("node-b", nil), "node-b"},

		{"creates its Lease", "create", "coordination.k8s.io", "leases", "", lease("kube-node-lease", "node-a"), nil, ""},
		{"renews its Lease", "update", "coordination.k8s.io", "leases", "", lease("kube-node-lease", "node-a"), lease("kube-node-lease", "node-a"), ""},
		{"may not create node B's Lease", "create", "coordination.k8s.io", "leases", "", lease("kube-node-lease", "node-b"), nil, "its own Lease kube-node-lease/node-a, not kube-node-lease/node-b"},
		{"may not create a Lease elsewhere", "create", "coordination.k8s.io", "leases", "", lease("kube-system", "node-a"), nil, "not kube-system/node-a"},

		{"updates the status of its pod", "update", "", "pods", "status", pod("default", "mine", "node-a"), pod("default", "mine", "node-a"), ""},
		{"may not update the status of node B's pod", "update", "", "pods", "status", pod("default", "theirs", "node-b"), pod("default", "theirs", "node-b"), "bound to node-b"},
		{"may not update the status of an unbound pod", "patch", "", "pods", "status", pod("default", "p", ""), pod("default", "p", ""), "bound to no node"},
		{"may not bind a pod to itself through status", "patch", "", "pods", "status", pod("default", "theirs", "node-a"), pod("default", "theirs", "node-b"), "bound to node-b"},
		{"deletes its pod", "delete", "", "pods", "", nil, pod("default", "mine", "node-a"), ""},
		{"may not delete node B's pod", "delete", "", "pods", "", nil, pod("default", "theirs", "node-b"), "bound to node-b"},
		{"may not create ordinary pods", "create", "", "pods", "", pod("default", "new", "node-a"), nil, "may create only mirror pods"},
		{"may not change a pod's spec", "update", "", "pods", "", pod("default", "mine", "node-a"), pod("default", "mine", "node-a"), "only the status"},

		{"event about itself", "create", "", "events", "", event("Node", "", "node-a"), nil, ""},
		{"event about its pod", "create", "", "events", "", event("Pod", "default", "mine"), nil, ""},
		{"events.k8s.io event about itself", "create", "events.k8s.io", "events", "",
			&eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, nil, ""},
		{"no event about node B", "create", "", "events", "", event("Node", "", "node-b"), nil, `not about Node "node-b"`},
		{"no event about node B's pod", "create", "", "events", "", event("Pod", "default", "theirs"), nil, "pod default/theirs is not"},
		{"no event about a missing pod", "create", "", "events", "", event("Pod", "default", "ghost"), nil, "does not exist"},
		{"no event about a Service", "create", "", "events", "", event("Service", "default", "s"), nil, `not about Service "s"`},
		{"may not retarget node B's event", "update", "", "events", "", event("Node", "", "node-a"), event("Node", "", "node-b"), "node-b"},

		{"nothing else", "update", "", "services", "", &corev1.Service{}, &corev1.Service{}, "may not write services"},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			a := res(nodeA, c.verb, c.group, c.resource, c.sub, "default", "")
			err := r.Admit(context.Background(), a, c.obj, c.old)
			if c.deny == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("admitted, want a refusal mentioning %q", c.deny)
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.deny) {
				t.Fatalf("refusal %v (forbidden: %v), want a 403 mentioning %q", err, apierrors.IsForbidden(err), c.deny)
			}
			// Administrators are not restricted.
			a.User = admin
			if err := r.Admit(context.Background(), a, c.obj, c.old); err != nil {
				t.Fatalf("admin refused: %v", err)
			}
		})
	}
}

func TestNodeRestrictionWithoutPodLookup(t *testing.T) {
	err := (&NodeRestriction{}).Admit(context.Background(), res(nodeA, "create", "", "events", "", "default", ""), event("Pod", "default", "mine"), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot look pods up") {
		t.Fatalf("got %v, want a refusal explaining pods cannot be looked up", err)
	}
}

func withPodCIDR(n *corev1.Node, cidr string) *corev1.Node {
	n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
	return n
}
