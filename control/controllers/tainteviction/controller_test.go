package tainteviction

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// TestTolerationSecondsCountFromTimeAdded: a pod tolerating unreachable for 30 s goes 30
// s after the taint's timeAdded — not 30 s after the controller noticed — and not a
// second before.
func TestTolerationSecondsCountFromTimeAdded(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](30))))
	h.taintNode("n1")
	h.tick()

	tainted := h.clock.Now()
	h.clock.Step(5 * time.Second) // the taint reaches the controller 5 s late
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, tainted))
	h.tick()
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(tainted.Add(30*time.Second)) {
		t.Fatalf("deadline %v, %v; want timeAdded+30s %v", next, ok, tainted.Add(30*time.Second))
	}
	h.advance(24 * time.Second) // 29 s after the taint
	if !h.exists("web") {
		t.Fatal("pod deleted before its toleration ran out")
	}
	h.clock.Step(999 * time.Millisecond)
	h.tick()
	if !h.exists("web") {
		t.Fatal("pod deleted 29.999 s after the taint")
	}
	h.clock.Step(time.Millisecond)
	h.tick()
	if h.exists("web") {
		t.Fatal("pod still there 30 s after the taint")
	}
	if got := h.drainEvents(); !slices.Contains(got, "Normal TaintManagerEviction Marking for deletion Pod default/web") {
		t.Errorf("events %q, want the marking event", got)
	}
}

// TestUntoleratedPodDeletedAtOnceAfterMarking: DisruptionTarget is set through
// pods/status before the delete, which carries the pod's UID as a precondition.
func TestUntoleratedPodDeletedAtOnceAfterMarking(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", tolerate(v1.TaintNodeNotReady, ptr[int64](300))))
	h.putPod(newPod("other-node", "n2"))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.taintNode("n2")
	var marked *v1.Pod
	h.client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			marked = a.(k8stesting.UpdateAction).GetObject().(*v1.Pod).DeepCopy()
		}
		return false, nil, nil
	})
	h.tick()
	if h.exists("web") {
		t.Fatal("pod not tolerating unreachable survived")
	}
	if !h.exists("other-node") {
		t.Fatal("pod on an untainted node deleted")
	}
	var verbs []string
	for _, a := range h.client.Actions() {
		if a.GetResource() == podsResource {
			verbs = append(verbs, a.GetVerb()+"/"+a.GetSubresource())
		}
	}
	if !slices.Equal(verbs, []string{"update/status", "delete/"}) {
		t.Fatalf("pod actions %v, want the status update then the delete", verbs)
	}
	var cond *v1.PodCondition
	for i := range marked.Status.Conditions {
		if marked.Status.Conditions[i].Type == v1.DisruptionTarget {
			cond = &marked.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != "DeletionByTaintManager" || !cond.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("DisruptionTarget condition %+v, want True/DeletionByTaintManager at t0", cond)
	}
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			pre := d.GetDeleteOptions().Preconditions
			if pre == nil || pre.UID == nil || *pre.UID != types.UID("uid-web") {
				t.Errorf("delete preconditions %+v, want the pod's UID", pre)
			}
		}
	}
	if got := metricValue(t, h, "plinth_tainteviction_pod_deletions_total"); got != 1 {
		t.Errorf("deletions = %v, want 1", got)
	}
}

func TestPodToleratingForeverIsNeverDeleted(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("daemon", "n1", tolerate("", nil)))
	h.putPod(newPod("mixed", "n1", tolerate(v1.TaintNodeUnreachable, nil), tolerate(v1.TaintNodeUnreachable, ptr[int64](10))))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	if _, ok := h.ctrl.nextDeadline(); ok {
		t.Fatal("a deletion was scheduled for pods tolerating forever")
	}
	h.clock.Step(24 * time.Hour)
	h.tick()
	if !h.exists("daemon") || !h.exists("mixed") {
		t.Fatal("a pod tolerating forever was deleted")
	}
	if got := len(h.client.Actions()); got != 0 {
		t.Errorf("%d API calls, want none", got)
	}
}

// TestTaintRemovedBeforeDeadlineCancels: the node recovers 20 s into a 30 s toleration;
// the deletion is cancelled with an event, and nothing happens at the old deadline.
func TestTaintRemovedBeforeDeadlineCancels(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](30))))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	h.advance(20 * time.Second)
	h.taintNode("n1")
	h.tick()
	if _, ok := h.ctrl.nextDeadline(); ok {
		t.Fatal("deadline still armed after the taint went")
	}
	if got := h.drainEvents(); !slices.Equal(got, []string{"Normal TaintManagerEviction Cancelling deletion of Pod default/web"}) {
		t.Errorf("events %q, want one cancelling event", got)
	}
	h.advance(time.Minute)
	if !h.exists("web") {
		t.Fatal("pod deleted after its taint was removed")
	}
	// A taint added again starts a new 30 s from its own timeAdded.
	again := h.clock.Now()
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, again))
	h.tick()
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(again.Add(30*time.Second)) {
		t.Errorf("new deadline %v, %v; want %v", next, ok, again.Add(30*time.Second))
	}
}

// TestSmallestTolerationWins: with both NoExecute taints, the pod goes when the
// shorter of its two tolerations runs out, each counted from its own taint.
func TestSmallestTolerationWins(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", tolerate(v1.TaintNodeNotReady, ptr[int64](300)), tolerate(v1.TaintNodeUnreachable, ptr[int64](30))))
	h.taintNode("n1", taintAt(v1.TaintNodeNotReady, t0), taintAt(v1.TaintNodeUnreachable, t0.Add(100*time.Second)))
	h.tick()
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(t0.Add(130*time.Second)) {
		t.Fatalf("deadline %v, %v; want t0+130s (unreachable's 30 s from its timeAdded)", next, ok)
	}
}

// TestTaintWithoutTimeAddedCountsFromFirstSight: a taint someone added without
// timeAdded is timed from when this controller first saw it.
func TestTaintWithoutTimeAddedCountsFromFirstSight(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", v1.Toleration{Key: "example.com/maint", Operator: v1.TolerationOpEqual, Value: "yes",
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](10)}))
	h.clock.Step(7 * time.Second)
	seen := h.clock.Now()
	h.taintNode("n1", v1.Taint{Key: "example.com/maint", Value: "yes", Effect: v1.TaintEffectNoExecute})
	h.tick()
	h.clock.Step(3 * time.Second)
	h.putPod(newPod("web", "n1", v1.Toleration{Key: "example.com/maint", Operator: v1.TolerationOpEqual, Value: "yes",
		Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](10)})) // a pod update re-decides
	h.tick()
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(seen.Add(10*time.Second)) {
		t.Fatalf("deadline %v, %v; want first sight + 10 s = %v", next, ok, seen.Add(10*time.Second))
	}
	// A value the toleration does not match is not tolerated at all.
	h.taintNode("n1", v1.Taint{Key: "example.com/maint", Value: "now", Effect: v1.TaintEffectNoExecute})
	h.tick()
	if h.exists("web") {
		t.Fatal("pod not tolerating the taint's value survived")
	}
}

// TestRestartKeepsDeadlines: a new controller counts from timeAdded, so a pod whose
// toleration ran out while no controller ran is deleted at once.
func TestRestartKeepsDeadlines(t *testing.T) {
	h := newHarness(t)
	h.clock.Step(time.Hour)
	h.putPod(newPod("late", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](300))))
	h.putPod(newPod("early", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](3900))))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	if h.exists("late") {
		t.Error("pod whose toleration ran out before the start survived")
	}
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(t0.Add(3900*time.Second)) {
		t.Errorf("deadline %v, %v; want t0+3900s", next, ok)
	}
}

// TestFailedDeletionIsRetried: a failing API is retried after a second, then longer.
func TestFailedDeletionIsRetried(t *testing.T) {
	h := newHarness(t)
	fail := 2
	h.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail > 0 {
			fail--
			return true, nil, errors.New("etcd unavailable")
		}
		return false, nil, nil
	})
	h.putPod(newPod("web", "n1"))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	if !h.exists("web") {
		t.Fatal("deleted despite the failure")
	}
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("retry at %v, %v; want t0+1s", next, ok)
	}
	h.advance(time.Second)
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("second retry at %v, %v; want t0+3s", next, ok)
	}
	h.advance(2 * time.Second)
	if h.exists("web") {
		t.Fatal("not deleted on the third try")
	}
	if !strings.Contains(h.logs.String(), "etcd unavailable") {
		t.Error("failure not logged")
	}
}

// TestReplacedPodIsNotDeleted: a pod deleted and created again under the same name
// before the deadline is a different pod; the old deadline does not touch it.
func TestReplacedPodIsNotDeleted(t *testing.T) {
	h := newHarness(t)
	h.putPod(newPod("web", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](30))))
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	// Rebound elsewhere under the same name, with a new UID, and no event yet.
	replacement := newPod("web", "n2", tolerate(v1.TaintNodeUnreachable, ptr[int64](30)))
	replacement.UID = "uid-web-2"
	if err := h.client.Tracker().Update(podsResource, replacement, "default"); err != nil {
		t.Fatal(err)
	}
	if err := h.pods.Update(replacement); err != nil {
		t.Fatal(err)
	}
	h.advance(31 * time.Second)
	if !h.exists("web") {
		t.Fatal("replacement pod deleted by the old pod's deadline")
	}
}

// TestTerminatingPodIsLeftAlone: a pod already being deleted is not deleted again.
func TestTerminatingPodIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	p := newPod("web", "n1")
	p.DeletionTimestamp = ptr(metav1.NewTime(t0))
	h.putPod(p)
	h.taintNode("n1", taintAt(v1.TaintNodeUnreachable, t0))
	h.tick()
	if got := len(h.client.Actions()); got != 0 {
		t.Errorf("%d API calls for a terminating pod, want none", got)
	}
	if got := h.drainEvents(); len(got) != 0 {
		t.Errorf("events %q for a terminating pod", got)
	}
}

func metricValue(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
