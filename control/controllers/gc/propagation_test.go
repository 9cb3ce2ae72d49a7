package gc

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestOrphanRemovesReferencesThenFinalizer(t *testing.T) {
	owner := markDeleted(lease("ns", "owner"), metav1.FinalizerOrphanDependents, "example.com/other")
	other := nodeObj("other")
	d1 := lease("ns", "d1", ownerRef(owner, true))
	d2 := lease("ns", "d2", ownerRef(other, false), ownerRef(owner, false))
	h := newHarness(t, owner, other, d1, d2)

	h.reconcile(owner)
	if got := h.get(d1); got == nil || len(got.GetOwnerReferences()) != 0 {
		t.Errorf("d1 after orphaning: %v, want it kept without owner references", got)
	}
	if got := h.get(d2); got == nil || !slices.Equal(ownerUIDs(got), []types.UID{other.GetUID()}) {
		t.Errorf("d2 after orphaning: %v, want it kept with only its other owner", got)
	}
	got := h.get(owner)
	if got == nil || !slices.Equal(got.GetFinalizers(), []string{"example.com/other"}) {
		t.Fatalf("owner after orphaning: %v, want only the orphan finalizer removed", got)
	}
	// The dependents are released before the owner may go.
	w := h.writes()
	want := []string{"patch leases ns/d1", "patch leases ns/d2", "patch leases ns/owner"}
	if !sameSet(w[:2], want[:2]) || len(w) != 3 || w[2] != want[2] {
		t.Errorf("writes %v, want both dependents patched, then the owner", w)
	}
	if n := counterValue(t, h.ctrl.metrics.orphaned); n != 2 {
		t.Errorf("plinth_gc_orphaned_total = %v, want 2", n)
	}
	if _, deleted := h.deleteOptions("d1"); deleted {
		t.Error("an orphaned dependent was deleted")
	}

	// Idempotent: with the owner's update still unseen, a second pass finds the
	// references and the finalizer gone and writes nothing.
	h.reconcile(owner)
	if again := h.writes(); len(again) != 3 {
		t.Errorf("second reconcile wrote %v", again[3:])
	}
}

func TestOrphanWaitsForCompleteGraph(t *testing.T) {
	owner := markDeleted(lease("ns", "owner"), metav1.FinalizerOrphanDependents)
	h := newHarness(t, owner)
	h.ctrl.monitors.running[leases] = &monitor{synced: func() bool { return false }}

	if err := h.ctrl.reconcile(t.Context(), owner.GetUID()); err != errGraphIncomplete {
		t.Fatalf("reconcile with an unsynced informer: %v, want errGraphIncomplete", err)
	}
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v before the graph is complete, want none", w)
	}
}

func TestForegroundDeletesDependentsThenReleasesOwner(t *testing.T) {
	owner := markDeleted(lease("ns", "owner"), metav1.FinalizerDeleteDependents)
	alive := nodeObj("alive")
	blocking := lease("ns", "blocking", ownerRef(owner, true))
	loose := lease("ns", "loose", ownerRef(owner, false))
	shared := lease("ns", "shared", ownerRef(owner, true), ownerRef(alive, false))
	h := newHarness(t, owner, alive, blocking, loose, shared)

	h.drain()
	if h.get(owner) == nil || !slices.Contains(h.get(owner).GetFinalizers(), metav1.FinalizerDeleteDependents) {
		t.Fatal("owner released while blocking dependents remain")
	}
	if h.get(blocking) != nil || h.get(loose) != nil {
		t.Errorf("dependents left: blocking %v, loose %v; want both deleted", h.get(blocking) != nil, h.get(loose) != nil)
	}
	if opts, ok := h.deleteOptions("blocking"); !ok || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
		t.Errorf("blocking dependent (which owns nothing) deleted: %v with %v, want Background", ok, opts.PropagationPolicy)
	}
	got := h.get(shared)
	if got == nil || !slices.Equal(ownerUIDs(got), []types.UID{alive.GetUID()}) {
		t.Fatalf("shared dependent: %v, want kept with only its existing owner", got)
	}

	// The informers report what happened; the last blocking one's update releases the owner.
	h.forget(blocking)
	h.forget(loose)
	h.drain()
	if h.get(owner) == nil || !slices.Contains(h.get(owner).GetFinalizers(), metav1.FinalizerDeleteDependents) {
		t.Fatal("owner released while the shared dependent still blocks it in the graph")
	}
	h.observe(got)
	h.drain()
	if o := h.get(owner); o == nil || len(o.GetFinalizers()) != 0 {
		t.Fatalf("owner after its blocking dependents went: %v, want the foregroundDeletion finalizer removed", o)
	}
	w := h.writes()
	if last := w[len(w)-1]; last != "patch leases ns/owner" {
		t.Errorf("last write %q, want the owner's finalizer patch after the dependents (%v)", last, w)
	}
	if n := counterValue(t, h.ctrl.metrics.deletions.WithLabelValues("leases.coordination.k8s.io")); n != 2 {
		t.Errorf("plinth_gc_deletions_total = %v, want 2", n)
	}
}

func TestForegroundWithoutBlockingDependentsReleasesAtOnce(t *testing.T) {
	owner := markDeleted(lease("ns", "owner"), metav1.FinalizerDeleteDependents)
	loose := lease("ns", "loose", ownerRef(owner, false))
	h := newHarness(t, owner, loose)

	h.reconcile(owner)
	if o := h.get(owner); o == nil || len(o.GetFinalizers()) != 0 {
		t.Fatalf("owner with only non-blocking dependents: %v, want released", o)
	}
	// The API server deletes an object marked for deletion whose last finalizer goes;
	// the fake does not, so the test does, and reports it as the informer would.
	if err := h.client.Tracker().Delete(leases, "ns", "owner"); err != nil {
		t.Fatal(err)
	}
	h.forget(owner)
	h.drain()
	if h.get(loose) != nil {
		t.Error("non-blocking dependent of a Foreground owner was not deleted")
	}
}

func TestForegroundChainDeletesMiddleInForeground(t *testing.T) {
	top := markDeleted(lease("ns", "top"), metav1.FinalizerDeleteDependents)
	middle := lease("ns", "middle", ownerRef(top, true))
	bottom := lease("ns", "bottom", ownerRef(middle, true))
	h := newHarness(t, top, middle, bottom)

	h.drain()
	opts, ok := h.deleteOptions("middle")
	if !ok || opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationForeground {
		t.Fatalf("middle of a Foreground chain deleted: %v with %v, want Foreground", ok, opts.PropagationPolicy)
	}
	if h.get(bottom) == nil {
		t.Error("bottom deleted directly; it should go through middle's Foreground deletion")
	}
	if h.get(top) == nil || len(h.get(top).GetFinalizers()) == 0 {
		t.Error("top released while middle still exists")
	}
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
