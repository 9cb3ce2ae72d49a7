package gc

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestAbsentOwnersDeleteDependent(t *testing.T) {
	gone := nodeObj("gone")          // never existed in the fake
	replaced := lease("ns", "owner") // exists under another UID
	dep := lease("ns", "dep", ownerRef(gone, false), ownerRef(replaced, true))
	h := newHarness(t, withUID(replaced, "uid-of-the-new-one"), dep)

	h.reconcile(dep)
	if h.get(dep) != nil {
		t.Fatalf("dependent survives with both owners absent; writes %v", h.writes())
	}
	opts, ok := h.deleteOptions("dep")
	if !ok {
		t.Fatalf("no DELETE of the dependent; writes %v", h.writes())
	}
	if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("propagation %v, want Background", opts.PropagationPolicy)
	}
	if p := opts.Preconditions; p == nil || p.UID == nil || *p.UID != dep.GetUID() || p.ResourceVersion == nil {
		t.Errorf("preconditions %+v, want the dependent's UID and resourceVersion", opts.Preconditions)
	}
	if got := counterValue(t, h.ctrl.metrics.deletions.WithLabelValues("leases.coordination.k8s.io")); got != 1 {
		t.Errorf("plinth_gc_deletions_total{resource=leases.coordination.k8s.io} = %v, want 1", got)
	}
	if h.get(withUID(replaced, "uid-of-the-new-one")) == nil {
		t.Error("the owner's namesake with another UID was deleted")
	}

	// Idempotent: the informer has not reported the deletion yet; deciding again
	// finds the dependent gone and writes nothing.
	before := len(h.writes())
	h.reconcile(dep)
	if after := h.writes(); len(after) != before {
		t.Errorf("second reconcile wrote %v", after[before:])
	}
}

func TestOneExistingOwnerKeepsDependent(t *testing.T) {
	alive := nodeObj("alive")
	gone := lease("ns", "gone")
	dep := lease("ns", "dep", ownerRef(alive, false), ownerRef(gone, true))
	h := newHarness(t, alive, dep)

	h.reconcile(dep)
	got := h.get(dep)
	if got == nil {
		t.Fatalf("dependent with an existing owner was deleted; writes %v", h.writes())
	}
	if refs := ownerUIDs(got); !slices.Equal(refs, []types.UID{alive.GetUID()}) {
		t.Errorf("owner references %v, want only the existing owner %s (the absent one removed)", refs, alive.GetUID())
	}
	if _, deleted := h.deleteOptions("dep"); deleted {
		t.Error("the collector sent a DELETE for a dependent with an existing owner")
	}
	if got := counterValue(t, h.ctrl.metrics.orphaned); got != 1 {
		t.Errorf("plinth_gc_orphaned_total = %v, want 1 reference removed", got)
	}
}

func TestOwnersInGraphNeedNoLiveReads(t *testing.T) {
	owner := nodeObj("owner")
	dep := lease("ns", "dep", ownerRef(owner, true))
	h := newHarness(t, owner, dep)
	h.client.ClearActions()

	h.drain() // the dependent, queued by its add event
	if acts := h.client.Actions(); len(acts) != 0 {
		t.Errorf("dependent of an owner the informers hold caused API calls: %v", acts)
	}
	// The owner's deletion event sends the dependent back, now with a live check.
	if err := h.client.Tracker().Delete(nodes, "", "owner"); err != nil {
		t.Fatal(err)
	}
	h.forget(owner)
	if h.ctrl.queue.Len() != 1 {
		t.Fatalf("queue holds %d items after the owner's deletion, want the dependent", h.ctrl.queue.Len())
	}
	h.drain()
	if h.get(dep) != nil {
		t.Fatalf("dependent survives its deleted owner; writes %v", h.writes())
	}
}

func TestNamespacedOwnerElsewhereIsAbsent(t *testing.T) {
	owner := lease("other", "owner")
	dep := lease("ns", "dep", ownerRef(owner, false))
	h := newHarness(t, owner, dep)

	h.reconcile(dep)
	if h.get(dep) != nil {
		t.Fatal("dependent of a namespaced owner in another namespace was kept")
	}
	if h.get(owner) == nil {
		t.Fatal("the owner in the other namespace was deleted")
	}
	if ev := h.events.list(); !slices.Contains(ev, "Warning OwnerRefInvalidNamespace ns/dep") {
		t.Errorf("events %v, want a warning OwnerRefInvalidNamespace on ns/dep", ev)
	}
}

func TestClusterScopedDependentOfNamespacedOwnerIsNeverCollected(t *testing.T) {
	owner := lease("ns", "owner") // absent from the fake: would be collectable if resolvable
	dep := nodeObj("n1", ownerRef(owner, false))
	h := newHarness(t, dep)

	h.reconcile(dep)
	if h.get(dep) == nil {
		t.Fatal("cluster-scoped dependent of a namespaced owner was deleted")
	}
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
	if ev := h.events.list(); len(ev) != 1 || !strings.Contains(ev[0], "OwnerRefInvalidNamespace /n1") {
		t.Errorf("events %v, want one OwnerRefInvalidNamespace warning on n1", ev)
	}
}

func TestUnknownOwnerKindKeepsDependentAndRetries(t *testing.T) {
	dep := lease("ns", "dep", metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "uid-w"})
	h := newHarness(t, dep)

	if err := h.ctrl.reconcile(t.Context(), dep.GetUID()); err == nil || !strings.Contains(err.Error(), "Widget") {
		t.Fatalf("reconcile: %v, want an error naming the unresolvable kind", err)
	}
	if h.get(dep) == nil {
		t.Fatal("dependent of an owner of unknown kind was deleted")
	}
}

func TestDependentAlreadyBeingDeletedIsLeftAlone(t *testing.T) {
	dep := markDeleted(lease("ns", "dep", ownerRef(nodeObj("gone"), false)), "example.com/hold")
	h := newHarness(t, dep)
	h.client.ClearActions()

	h.reconcile(dep)
	if acts := h.client.Actions(); len(acts) != 0 {
		t.Errorf("object being deleted by someone else caused API calls: %v", acts)
	}
}
