package gc

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func testNode(o *unstructured.Unstructured) *node {
	n, _ := nodeFromObject(resourceOf(o), o.GetKind(), partial(o))
	return n
}

func uidsOf(ns []*node) []types.UID {
	var out []types.UID
	for _, n := range ns {
		out = append(out, n.uid)
	}
	slices.Sort(out)
	return out
}

func TestGraphIndexFollowsOwnerReferences(t *testing.T) {
	g := newGraph()
	a, b := nodeObj("a"), nodeObj("b")
	dep := lease("ns", "dep", ownerRef(a, true), ownerRef(b, false))
	g.observe(testNode(dep))
	if got := uidsOf(g.dependentsOf(a.GetUID())); !slices.Equal(got, []types.UID{dep.GetUID()}) {
		t.Fatalf("dependents of a: %v, want [dep] (owners need not be observed)", got)
	}

	// Dropping an owner reference moves the dependent out of its index entry.
	moved := dep.DeepCopy()
	moved.SetOwnerReferences([]metav1.OwnerReference{ownerRef(b, false)})
	g.observe(testNode(moved))
	if g.hasDependents(a.GetUID()) {
		t.Error("a still has dependents after the reference to it was removed")
	}
	if !g.hasDependents(b.GetUID()) {
		t.Error("b lost its dependent")
	}

	if old := g.forget(dep.GetUID()); old == nil || old.name != "dep" {
		t.Fatalf("forget returned %+v, want the dependent's record", old)
	}
	if g.hasDependents(b.GetUID()) || g.size() != 0 || len(g.dependents) != 0 {
		t.Errorf("after forget: size %d, index %v; want both empty", g.size(), g.dependents)
	}
}

func TestGraphForgetResource(t *testing.T) {
	g := newGraph()
	owner := nodeObj("owner")
	g.observe(testNode(owner))
	g.observe(testNode(lease("ns", "l1", ownerRef(owner, false))))
	g.observe(testNode(lease("ns", "l2")))
	if got := g.forgetResource(leases); len(got) != 2 {
		t.Fatalf("forgetResource(leases) = %v, want two UIDs", got)
	}
	if g.size() != 1 || g.hasDependents(owner.GetUID()) {
		t.Errorf("after forgetting leases: size %d, owner has dependents %v; want 1 and false", g.size(), g.hasDependents(owner.GetUID()))
	}
}

func TestToCheck(t *testing.T) {
	owner := nodeObj("owner")
	other := nodeObj("other")
	dep := lease("ns", "dep", ownerRef(owner, true))
	plain := lease("ns", "plain")

	cases := []struct {
		name     string
		old, new *unstructured.Unstructured
		want     []types.UID
	}{
		{"added dependent", nil, dep, []types.UID{dep.GetUID()}},
		{"added object without owners", nil, plain, nil},
		{"update that changes no ownership", dep, withLabel(dep), nil},
		{"added owner reference", plain, withOwners(plain, ownerRef(owner, false)), []types.UID{plain.GetUID()}},
		{"removed blocking reference", dep, withOwners(dep, ownerRef(other, false)), []types.UID{dep.GetUID(), owner.GetUID()}},
		{"blockOwnerDeletion cleared", dep, withOwners(dep, ownerRef(owner, false)), []types.UID{dep.GetUID(), owner.GetUID()}},
		{"removed last reference", dep, withOwners(dep), []types.UID{owner.GetUID()}},
		{"orphan deletion starts", plain, markDeleted(plain.DeepCopy(), metav1.FinalizerOrphanDependents), []types.UID{plain.GetUID()}},
		{"deletion without collector finalizers", plain, markDeleted(plain.DeepCopy(), "example.com/x"), nil},
		{"blocking dependent deleted", dep, nil, []types.UID{owner.GetUID()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGraph()
			var oldN, newN *node
			if tc.old != nil {
				oldN = testNode(tc.old)
			}
			if tc.new != nil {
				newN = testNode(tc.new)
			}
			got := g.toCheck(oldN, newN)
			if !slices.Equal(got, tc.want) {
				t.Errorf("toCheck = %v, want %v", got, tc.want)
			}
		})
	}

	// An owner's deletion sends its dependents back.
	g := newGraph()
	g.observe(testNode(owner))
	g.observe(testNode(dep))
	if got := g.toCheck(g.forget(owner.GetUID()), nil); !slices.Equal(got, []types.UID{dep.GetUID()}) {
		t.Errorf("toCheck after the owner's deletion = %v, want its dependent", got)
	}
}

func withLabel(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	c.SetLabels(map[string]string{"x": "y"})
	return c
}

func withOwners(o *unstructured.Unstructured, refs ...metav1.OwnerReference) *unstructured.Unstructured {
	c := o.DeepCopy()
	c.SetOwnerReferences(refs)
	return c
}

func TestDecide(t *testing.T) {
	refs := []metav1.OwnerReference{{UID: "a"}, {UID: "b"}}
	cases := []struct {
		name          string
		states        []ownerState
		hasDependents bool
		finalizers    []string
		want          decision
	}{
		{"all absent", []ownerState{ownerAbsent, ownerAbsent}, false, nil,
			decision{delete: true, policy: metav1.DeletePropagationBackground}},
		{"all absent, own dependents", []ownerState{ownerAbsent, ownerAbsent}, true, nil,
			decision{delete: true, policy: metav1.DeletePropagationBackground}},
		{"all absent, orphan finalizer honoured", []ownerState{ownerAbsent, ownerAbsent}, false, []string{metav1.FinalizerOrphanDependents},
			decision{delete: true, policy: metav1.DeletePropagationOrphan}},
		{"all absent, foreground finalizer honoured", []ownerState{ownerAbsent, ownerAbsent}, false, []string{metav1.FinalizerDeleteDependents},
			decision{delete: true, policy: metav1.DeletePropagationForeground}},
		{"one exists", []ownerState{ownerAbsent, ownerExists}, false, nil,
			decision{dropOwners: []types.UID{"a"}}},
		{"all exist", []ownerState{ownerExists, ownerExists}, false, nil, decision{}},
		{"one exists, one deleting dependents", []ownerState{ownerExists, ownerDeletingDependents}, false, nil,
			decision{dropOwners: []types.UID{"b"}}},
		{"deleting dependents, leaf", []ownerState{ownerDeletingDependents, ownerAbsent}, false, nil,
			decision{delete: true, policy: metav1.DeletePropagationBackground}},
		{"deleting dependents, owns objects", []ownerState{ownerDeletingDependents, ownerAbsent}, true, nil,
			decision{delete: true, policy: metav1.DeletePropagationForeground}},
		{"unresolvable keeps everything", []ownerState{ownerUnresolvable, ownerAbsent}, false, nil, decision{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(refs, tc.states, tc.hasDependents, tc.finalizers)
			if got.delete != tc.want.delete || got.policy != tc.want.policy || !slices.Equal(got.dropOwners, tc.want.dropOwners) {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCollectableResources(t *testing.T) {
	got, complete, err := collectableResources(testDiscovery(), DefaultIgnoredResources())
	if err != nil || !complete {
		t.Fatalf("collectableResources: complete %v, %v", complete, err)
	}
	// Events are ignored, subresources and resources without list/watch/delete skipped.
	want := map[schema.GroupVersionResource]string{leases: "Lease", nodes: "Node"}
	if !maps.Equal(got, want) {
		t.Errorf("collectableResources = %v, want %v", got, want)
	}
}
