package nodelifecycle

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// reconcileNode is the path a node update takes: the event handler marks it dirty and
// Run reconciles it, without waiting for a sweep.
func (h *harness) reconcileNode(name string) {
	h.t.Helper()
	h.ctrl.onNode(h.node(name))
	h.ctrl.reconcileDirty(h.ctx)
	h.resync()
}

func TestNoScheduleTaintsFollowConditionsAndSpec(t *testing.T) {
	h := newHarness(t)
	node := h.newNodeIn("n1", "a")
	node.Spec.Taints = []v1.Taint{
		{Key: "example.com/dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/drain", Effect: v1.TaintEffectNoExecute},
	}
	h.putNode(node)
	h.newNodesIn("other", "a", 3)
	h.sweep()
	if got := h.noSchedule("n1"); !slices.Equal(got, []string{"example.com/dedicated"}) {
		t.Fatalf("healthy node NoSchedule %v, want only the foreign taint", got)
	}

	steps := []struct {
		change func()
		want   []string
	}{
		{func() { h.setCondition("n1", v1.NodeMemoryPressure, v1.ConditionTrue) }, []string{v1.TaintNodeMemoryPressure}},
		{func() { h.setCondition("n1", v1.NodeDiskPressure, v1.ConditionTrue) }, []string{v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure}},
		{func() { h.setCondition("n1", v1.NodePIDPressure, v1.ConditionTrue) }, []string{v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure, v1.TaintNodePIDPressure}},
		{func() { h.setCondition("n1", v1.NodeMemoryPressure, v1.ConditionFalse) }, []string{v1.TaintNodeDiskPressure, v1.TaintNodePIDPressure}},
		{func() {
			h.setCondition("n1", v1.NodeDiskPressure, v1.ConditionFalse)
			h.setCondition("n1", v1.NodePIDPressure, v1.ConditionFalse)
			h.setCondition("n1", v1.NodeNetworkUnavailable, v1.ConditionTrue)
		}, []string{v1.TaintNodeNetworkUnavailable}},
		{func() {
			n := h.node("n1")
			n.Spec.Unschedulable = true
			h.putNode(n)
		}, []string{v1.TaintNodeNetworkUnavailable, v1.TaintNodeUnschedulable}},
		{func() { h.setCondition("n1", v1.NodeNetworkUnavailable, v1.ConditionFalse) }, []string{v1.TaintNodeUnschedulable}},
		{func() { h.report("n1", v1.ConditionFalse) }, []string{v1.TaintNodeUnschedulable, v1.TaintNodeNotReady}},
		{func() {
			h.report("n1", v1.ConditionTrue)
			n := h.node("n1")
			n.Spec.Unschedulable = false
			h.putNode(n)
		}, nil},
	}
	for i, s := range steps {
		s.change()
		h.reconcileNode("n1") // at once, through the node's own update
		want := append([]string{"example.com/dedicated"}, s.want...)
		if got := h.noSchedule("n1"); !slices.Equal(got, want) {
			t.Fatalf("step %d: NoSchedule %v, want %v", i, got, want)
		}
		// The foreign NoExecute taint is never touched.
		n := h.node("n1")
		if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == "example.com/drain" }) {
			t.Fatalf("step %d: foreign NoExecute taint removed: %v", i, n.Spec.Taints)
		}
		// A sweep agrees: nothing more to write, except the NoExecute taint that the
		// node reporting NotReady queued for (its zone has a token).
		updates := h.actions("update")
		h.sweep()
		wantUpdates := 0
		if slices.Contains(s.want, v1.TaintNodeNotReady) {
			wantUpdates = 1
		}
		if got := h.actions("update") - updates; got != wantUpdates {
			t.Fatalf("step %d: sweep after reconcile wrote the node %d times, want %d", i, got, wantUpdates)
		}
		if got := h.noSchedule("n1"); !slices.Equal(got, want) {
			t.Fatalf("step %d: after a sweep NoSchedule %v, want %v", i, got, want)
		}
	}

	// A silent node gets unreachable instead of not-ready, through the sweep alone.
	h.run(55*time.Second, 5*time.Second)
	if got := h.noSchedule("n1"); !slices.Contains(got, v1.TaintNodeUnreachable) || slices.Contains(got, v1.TaintNodeNotReady) {
		t.Errorf("silent node NoSchedule %v, want unreachable and not not-ready", got)
	}
}

// TestTaintUpdateRetriesConflictWithoutLosingOtherTaints: a conflict means someone else
// wrote the node; the controller fetches it again and keeps what they added.
func TestTaintUpdateRetriesConflictWithoutLosingOtherTaints(t *testing.T) {
	h := newHarness(t)
	h.newNodeIn("n1", "a")
	h.sweep()
	n := 0
	h.client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.UpdateAction).GetSubresource() != "" {
			return false, nil, nil
		}
		n++
		if n == 1 {
			// kubectl taints the node between the controller's read and its write.
			node := h.node("n1")
			node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: "example.com/kubectl", Effect: v1.TaintEffectNoSchedule})
			if err := h.client.Tracker().Update(nodesResource, node, ""); err != nil {
				t.Error(err)
			}
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale resourceVersion"))
		}
		return false, nil, nil
	})
	h.setCondition("n1", v1.NodeMemoryPressure, v1.ConditionTrue)
	h.reconcileNode("n1")
	if n != 2 {
		t.Fatalf("%d taint updates, want 2 (conflict, retry)", n)
	}
	if got := h.noSchedule("n1"); !slices.Equal(got, []string{"example.com/kubectl", v1.TaintNodeMemoryPressure}) {
		t.Errorf("NoSchedule %v, want kubectl's taint kept and memory-pressure added", got)
	}
}

func TestNodeEvents(t *testing.T) {
	h := newHarness(t)
	h.newNodeIn("n1", "a")
	h.newNodeIn("n2", "a")
	h.sweep()
	events := h.drainEvents()
	if got := countPrefix(events, "Normal RegisteredNode Node n1 event: Registered Node n1 in Controller"); got != 1 {
		t.Errorf("RegisteredNode events for n1: %d, want 1; events %q", got, events)
	}
	if got := countPrefix(events, "Normal RegisteredNode"); got != 2 {
		t.Errorf("RegisteredNode events: %d, want 2", got)
	}
	h.run(5*time.Second, 5*time.Second)
	if got := h.drainEvents(); len(got) != 0 {
		t.Errorf("events on a quiet sweep: %q", got)
	}

	// n2 keeps heartbeating; n1 goes silent and is marked once.
	for i := 0; i < 12; i++ {
		h.step(5 * time.Second)
		h.renewLease("n2")
		h.sweep()
	}
	events = h.drainEvents()
	if got := countPrefix(events, "Normal NodeNotReady Node n1 status is now: NodeNotReady"); got != 1 {
		t.Errorf("NodeNotReady events for n1: %d, want 1; events %q", got, events)
	}
	if got := countPrefix(events, "Normal NodeNotReady"); got != 1 {
		t.Errorf("NodeNotReady events: %d, want 1", got)
	}

	h.deleteNode("n1")
	h.sweep()
	events = h.drainEvents()
	if !slices.Contains(events, "Normal RemovingNode Node n1 event: Removing Node n1 from Controller") {
		t.Errorf("no RemovingNode for n1; events %q", events)
	}
}

func TestPodsOfSilentNodeMarkedNotReady(t *testing.T) {
	h := newHarness(t)
	h.newNodeIn("n1", "a")
	h.newNodeIn("n2", "a")
	h.renewLease("n2")
	pod := func(name, node string, ready v1.ConditionStatus) {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       v1.PodSpec{NodeName: node},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue},
				{Type: v1.PodReady, Status: ready},
			}},
		}
		if err := h.client.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pod("web-1", "n1", v1.ConditionTrue)
	pod("web-2", "n1", v1.ConditionTrue)
	pod("starting", "n1", v1.ConditionFalse)
	pod("elsewhere", "n2", v1.ConditionTrue)
	h.sweep()

	// n1 is NotReady by its own word: its agent speaks for its pods.
	h.report("n1", v1.ConditionFalse)
	h.sweep()
	for i := 0; i < 9; i++ {
		h.step(5 * time.Second)
		h.renewLease("n2")
		h.report("n1", v1.ConditionFalse)
		h.sweep()
	}
	if got := podStatusWrites(h); got != 0 {
		t.Fatalf("%d pod status writes for a node that is alive", got)
	}
	// n1 goes silent: 50 s later its pods are not Ready.
	for i := 0; i < 10; i++ {
		h.step(5 * time.Second)
		h.renewLease("n2")
		h.sweep()
	}
	for _, name := range []string{"web-1", "web-2"} {
		obj, err := h.client.Tracker().Get(podsResource, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*v1.Pod)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady && (c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(h.clock.Now())) {
				t.Errorf("%s Ready = %s since %v, want False since now", name, c.Status, c.LastTransitionTime)
			}
		}
	}
	if got := podStatusWrites(h); got != 2 {
		t.Errorf("%d pod status writes, want 2 (the not-Ready pod and the other node's pod untouched)", got)
	}
	h.run(10*time.Second, 5*time.Second)
	if got := podStatusWrites(h); got != 2 {
		t.Errorf("%d pod status writes after more sweeps, want still 2", got)
	}
	if !strings.Contains(h.logs.String(), "pod marked not Ready") {
		t.Error("marking not logged")
	}
}

func podStatusWrites(h *harness) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource() == podsResource && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}
