package podgc

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestTerminatedOverThresholdOldestFirst: with 6 terminated pods and a threshold of 3,
// the evicted one goes first, then the oldest by creation time, ties by name; running
// pods do not count. Terminal pods are deleted without a status write.
func TestTerminatedOverThresholdOldestFirst(t *testing.T) {
	opts := DefaultOptions()
	opts.TerminatedPodThreshold = 3
	h := newHarness(t, opts)
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	h.putPod(newPod("a", "n1", v1.PodSucceeded, t0.Add(5*time.Second)))
	h.putPod(newPod("c", "n1", v1.PodSucceeded, t0.Add(time.Second)))
	h.putPod(newPod("b", "n1", v1.PodFailed, t0.Add(time.Second)))
	h.putPod(newPod("d", "n1", v1.PodSucceeded, t0.Add(3*time.Second)))
	ev := newPod("e", "n1", v1.PodFailed, t0.Add(9*time.Second))
	ev.Status.Reason = "Evicted"
	h.putPod(ev)
	h.putPod(newPod("f", "n1", v1.PodSucceeded, t0.Add(7*time.Second)))
	h.putPod(newPod("old-but-running", "n1", v1.PodRunning, t0.Add(-time.Hour)))
	h.collect()

	if got, want := h.remaining(), []string{"a", "d", "f", "old-but-running"}; !slices.Equal(got, want) {
		t.Fatalf("remaining pods %v, want %v (evicted e, then b and c, the oldest, deleted)", got, want)
	}
	if got := h.podActions(); !slices.Equal(got, []string{"delete/", "delete/", "delete/"}) {
		t.Errorf("pod writes %v, want three deletes and no status writes", got)
	}
	for name, o := range h.deleteOptions() {
		if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 {
			t.Errorf("delete of %s: grace %v, want 0", name, o.GracePeriodSeconds)
		}
		if o.Preconditions == nil || o.Preconditions.UID == nil || string(*o.Preconditions.UID) != "uid-"+name {
			t.Errorf("delete of %s: preconditions %+v, want its UID", name, o.Preconditions)
		}
	}
	if got := h.counter("plinth_podgc_force_delete_pods_total", "default", reasonTerminated); got != 3 {
		t.Errorf("terminated deletions metric %v, want 3", got)
	}
	// At the threshold nothing more goes.
	h.client.ClearActions()
	h.every(time.Minute)
	if got := h.podActions(); len(got) != 0 {
		t.Errorf("pod writes %v at the threshold, want none", got)
	}
}

func TestTerminatedThresholdZeroKeepsEverything(t *testing.T) {
	opts := DefaultOptions()
	opts.TerminatedPodThreshold = 0
	h := newHarness(t, opts)
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	for i := range 5 {
		h.putPod(newPod(string(rune('a'+i)), "n1", v1.PodSucceeded, t0))
	}
	h.every(time.Minute)
	if got := h.remaining(); len(got) != 5 {
		t.Fatalf("remaining %v, want all 5 terminated pods with the rule off", got)
	}
}

// TestTerminatedPodsWaitingOnFinalizersAreNotCounted: a terminal pod whose deletion
// already went through and only waits for finalizers neither counts against the
// threshold nor gets deleted again.
func TestTerminatedPodsWaitingOnFinalizersAreNotCounted(t *testing.T) {
	opts := DefaultOptions()
	opts.TerminatedPodThreshold = 1
	h := newHarness(t, opts)
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	h.putPod(terminating(newPod("held", "n1", v1.PodSucceeded, t0), 0, "example.com/hold"))
	h.putPod(newPod("done", "n1", v1.PodSucceeded, t0.Add(time.Second)))
	h.collect()
	if got := h.podActions(); len(got) != 0 {
		t.Fatalf("pod writes %v, want none: one countable terminated pod is within the threshold", got)
	}
}

// TestOrphanedAfterQuarantineAndLiveRead: a pod bound to a node missing from the cache
// is deleted only after 40 s of quarantine and a live read that does not find the node
// either; a node the cache lags behind on is read, found, and quarantined again.
func TestOrphanedAfterQuarantineAndLiveRead(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	h.putNode(readyNode("late", v1.ConditionTrue), false) // in the API, not yet in the cache
	h.putPod(newPod("web", "n1", v1.PodRunning, t0))
	h.putPod(newPod("orphan", "ghost", v1.PodRunning, t0))
	h.putPod(newPod("orphan-done", "ghost", v1.PodSucceeded, t0))
	h.putPod(newPod("lagging", "late", v1.PodRunning, t0))

	h.collect() // t0: quarantine starts
	h.every(20 * time.Second)
	if got := h.nodeGets(); got != 0 {
		t.Fatalf("%d live node reads within the quarantine, want none", got)
	}
	if got := h.podActions(); len(got) != 0 {
		t.Fatalf("pod writes %v within the quarantine, want none", got)
	}
	h.clock.Step(19 * time.Second) // a pass off the period: 39 s is still quarantine
	h.collect()
	if !h.exists("orphan") || h.nodeGets() != 0 {
		t.Fatalf("orphan deleted (or nodes read: %d) 39 s after it was found", h.nodeGets())
	}
	h.clock.Step(time.Second) // 40 s
	h.collect()
	if h.exists("orphan") || h.exists("orphan-done") {
		t.Fatalf("orphans remain 40 s after quarantine and a live read: %v", h.remaining())
	}
	if !h.exists("web") || !h.exists("lagging") {
		t.Fatalf("pods of existing nodes deleted: remaining %v", h.remaining())
	}
	if got := h.nodeGets(); got != 2 {
		t.Errorf("%d live node reads, want 2 (ghost, late)", got)
	}
	marked := h.statusWrites()["orphan"]
	if marked == nil {
		t.Fatal("orphan deleted without a status write")
	}
	cond := conditionOf(marked, v1.DisruptionTarget)
	if marked.Status.Phase != v1.PodFailed || cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != "DeletionByPodGC" ||
		cond.Message != "PodGC: node no longer exists" || !cond.LastTransitionTime.Time.Equal(h.clock.Now()) {
		t.Errorf("orphan status %s, condition %+v; want Failed with DisruptionTarget=True/DeletionByPodGC now", marked.Status.Phase, cond)
	}
	if _, ok := h.statusWrites()["orphan-done"]; ok {
		t.Error("already terminal orphan got a status write")
	}
	if got := h.actionsOn("orphan"); !slices.Equal(got, []string{"update/status", "delete/"}) {
		t.Errorf("writes of orphan %v, want the status write before the delete", got)
	}
	if got := h.counter("plinth_podgc_force_delete_pods_total", "default", reasonOrphaned); got != 2 {
		t.Errorf("orphaned deletions metric %v, want 2", got)
	}

	// The lagging node was found: a fresh quarantine, so no read for another 40 s.
	h.every(20 * time.Second)
	if got := h.nodeGets(); got != 2 {
		t.Errorf("%d live node reads 20 s after 'late' was found, want still 2", got)
	}
	h.every(20 * time.Second)
	if got := h.nodeGets(); got != 3 || !h.exists("lagging") {
		t.Errorf("after a second quarantine: %d reads (want 3), lagging exists %v (want true)", h.nodeGets(), h.exists("lagging"))
	}
}

// TestNodeBackInCacheEndsQuarantine: a name that shows up in the cache during the
// quarantine is forgotten; no live read, no deletion.
func TestNodeBackInCacheEndsQuarantine(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putPod(newPod("web", "n1", v1.PodRunning, t0))
	h.collect()
	h.every(20 * time.Second)
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	h.every(time.Minute)
	if !h.exists("web") || h.nodeGets() != 0 {
		t.Fatalf("pod exists %v (want true), %d node reads (want 0)", h.exists("web"), h.nodeGets())
	}
	if len(h.ctrl.missing.since) != 0 {
		t.Errorf("quarantine %v, want empty", h.ctrl.missing.since)
	}
}

// TestDeletedNodeOrphansItsPods: a node deleted while its pods run; the quarantine
// starts at the first pass that misses it, and its pods go 40 s later.
func TestDeletedNodeOrphansItsPods(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putNode(readyNode("n1", v1.ConditionTrue), true)
	h.putPod(newPod("web", "n1", v1.PodRunning, t0))
	h.collect()
	h.deleteNode("n1")
	h.every(20 * time.Second) // t0+20 s: found missing
	h.every(20 * time.Second)
	if !h.exists("web") {
		t.Fatal("pod deleted 20 s into the quarantine")
	}
	h.every(20 * time.Second)
	if h.exists("web") {
		t.Fatal("pod of a deleted node survives 40 s of quarantine")
	}
}

// TestFailedLiveReadKeepsQuarantine: an error reading the node deletes nothing, and the
// next pass reads again without a new quarantine.
func TestFailedLiveReadKeepsQuarantine(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putPod(newPod("orphan", "ghost", v1.PodRunning, t0))
	fail := true
	h.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("etcd is having a day")
		}
		return false, nil, nil
	})
	h.collect()
	h.every(40 * time.Second)
	if !h.exists("orphan") {
		t.Fatal("pod deleted though the node could not be read")
	}
	fail = false
	h.every(20 * time.Second)
	if h.exists("orphan") {
		t.Fatal("pod kept after a successful read found its node gone")
	}
}

// TestTerminatingUnscheduledPods: a terminating pod bound to no node is marked Failed
// (without DisruptionTarget) and force-deleted; one that is not terminating stays.
func TestTerminatingUnscheduledPods(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putPod(terminating(newPod("stuck", "", v1.PodPending, t0), 30))
	h.putPod(newPod("pending", "", v1.PodPending, t0))
	h.collect()
	if h.exists("stuck") || !h.exists("pending") {
		t.Fatalf("remaining %v, want only pending", h.remaining())
	}
	marked := h.statusWrites()["stuck"]
	if marked == nil || marked.Status.Phase != v1.PodFailed || conditionOf(marked, v1.DisruptionTarget) != nil {
		t.Fatalf("status write %+v, want phase Failed and no DisruptionTarget", marked)
	}
	if o := h.deleteOptions()["stuck"]; o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || o.Preconditions.UID == nil {
		t.Errorf("delete options %+v, want grace 0 and a UID precondition", o)
	}
	if got := h.counter("plinth_podgc_force_delete_pods_total", "default", reasonUnscheduled); got != 1 {
		t.Errorf("unscheduled deletions metric %v, want 1", got)
	}
}

// TestOutOfServiceForceDelete: only terminating pods of nodes that are not Ready and
// tainted out-of-service are force-deleted, with DisruptionTarget first.
func TestOutOfServiceForceDelete(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	oos := v1.Taint{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}
	h.putNode(readyNode("down", v1.ConditionUnknown, oos), true)
	h.putNode(readyNode("up", v1.ConditionTrue, oos), true)
	h.putNode(readyNode("notready", v1.ConditionFalse), true)
	h.putPod(terminating(newPod("down-terminating", "down", v1.PodRunning, t0), 30))
	h.putPod(newPod("down-running", "down", v1.PodRunning, t0))
	h.putPod(terminating(newPod("up-terminating", "up", v1.PodRunning, t0), 30))
	h.putPod(terminating(newPod("notready-terminating", "notready", v1.PodRunning, t0), 30))
	h.collect()

	if got, want := h.remaining(), []string{"down-running", "notready-terminating", "up-terminating"}; !slices.Equal(got, want) {
		t.Fatalf("remaining %v, want %v", got, want)
	}
	marked := h.statusWrites()["down-terminating"]
	cond := conditionOf(marked, v1.DisruptionTarget)
	if marked.Status.Phase != v1.PodFailed || cond == nil || cond.Reason != "DeletionByPodGC" || !strings.Contains(cond.Message, "out-of-service") {
		t.Errorf("status %s, condition %+v; want Failed with DisruptionTarget/DeletionByPodGC", marked.Status.Phase, cond)
	}
	if got := h.podActions(); !slices.Equal(got, []string{"update/status", "delete/"}) {
		t.Errorf("pod writes %v, want the status write then the delete", got)
	}
	if got := h.counter("plinth_podgc_force_delete_pods_total", "default", reasonOutOfService); got != 1 {
		t.Errorf("out-of-service deletions metric %v, want 1", got)
	}
}

// TestPodPickedByTwoRulesIsDeletedOnce: a terminated, terminating, unbound pod over the
// threshold is deleted by the first rule only.
func TestPodPickedByTwoRulesIsDeletedOnce(t *testing.T) {
	opts := DefaultOptions()
	opts.TerminatedPodThreshold = 1
	h := newHarness(t, opts)
	h.putPod(terminating(newPod("x", "", v1.PodSucceeded, t0), 30))
	h.putPod(terminating(newPod("y", "", v1.PodSucceeded, t0.Add(time.Second)), 30))
	h.collect()
	if got := h.podActions(); !slices.Equal(got, []string{"delete/", "delete/"}) {
		t.Fatalf("pod writes %v, want two deletes", got)
	}
	if a, b := h.counter("plinth_podgc_force_delete_pods_total", "default", reasonTerminated),
		h.counter("plinth_podgc_force_delete_pods_total", "default", reasonUnscheduled); a != 1 || b != 1 {
		t.Errorf("terminated %v and unscheduled %v deletions, want 1 each", a, b)
	}
}

// TestFailedDeleteCountsAndRetries: a failed delete is counted and tried again at the
// next pass.
func TestFailedDeleteCountsAndRetries(t *testing.T) {
	h := newHarness(t, DefaultOptions())
	h.putPod(terminating(newPod("stuck", "", v1.PodFailed, t0), 30))
	fail := true
	h.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("connection reset")
		}
		return false, nil, nil
	})
	h.collect()
	if !h.exists("stuck") {
		t.Fatal("pod gone though its delete failed")
	}
	if got := h.counter("plinth_podgc_force_delete_pod_errors_total", "default", reasonUnscheduled); got != 1 {
		t.Errorf("errors metric %v, want 1", got)
	}
	fail = false
	h.every(20 * time.Second)
	if h.exists("stuck") {
		t.Fatal("pod not deleted at the next pass")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"negative threshold", func(o *Options) { o.TerminatedPodThreshold = -1 }, "TerminatedPodThreshold: -1"},
		{"zero period", func(o *Options) { o.CheckPeriod = 0 }, "CheckPeriod: 0s"},
		{"negative quarantine", func(o *Options) { o.Quarantine = -time.Second }, "Quarantine: -1s"},
	} {
		o := DefaultOptions()
		tc.mod(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
