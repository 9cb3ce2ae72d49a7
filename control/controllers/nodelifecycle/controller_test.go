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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var allConditions = []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

const (
	unknownTotal = "plinth_nodelifecycle_node_status_unknown_total"
	nodesGauge   = "plinth_nodelifecycle_nodes"
)

func TestNodeMarkedUnknownAfterGrace(t *testing.T) {
	h := newHarness(t)
	posted := h.newNode("n1", allConditions...)
	h.renewLease("n1")
	h.sweep()

	h.step(49 * time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("%d status writes 1 s before the grace ran out", got)
	}

	h.step(time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes at the end of the grace period = %d, want 1", got)
	}
	now := metav1.NewTime(h.clock.Now())
	for i, ct := range allConditions {
		c := h.condition("n1", ct)
		if c.Status != v1.ConditionUnknown || c.Reason != reasonUnknown || c.Message != messageUnknown {
			t.Errorf("%s = %s/%s/%q, want Unknown/%s/%q", ct, c.Status, c.Reason, c.Message, reasonUnknown, messageUnknown)
		}
		if !c.LastHeartbeatTime.Equal(&posted.Status.Conditions[i].LastHeartbeatTime) {
			t.Errorf("%s lastHeartbeatTime = %v, want the node's %v kept", ct, c.LastHeartbeatTime, posted.Status.Conditions[i].LastHeartbeatTime)
		}
		if !c.LastTransitionTime.Equal(&now) {
			t.Errorf("%s lastTransitionTime = %v, want now %v", ct, c.LastTransitionTime, now)
		}
	}
	if got := h.metric(unknownTotal); got != 1 {
		t.Errorf("%s = %v, want 1", unknownTotal, got)
	}
	if got := h.metric(nodesGauge); got != 1 {
		t.Errorf("%s = %v, want 1", nodesGauge, got)
	}
	if !strings.Contains(h.logs.String(), "conditions set to Unknown") {
		t.Errorf("transition not logged; logs:\n%s", h.logs)
	}
}

func TestStartupGraceForNodeThatNeverPostedReady(t *testing.T) {
	h := newHarness(t)
	node := h.newNode("new") // registered, never posted a condition
	h.sweep()

	h.step(55 * time.Second) // past GracePeriod, inside StartupGracePeriod
	h.sweep()
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("node still starting was written %d times", got)
	}

	h.step(5 * time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes after the startup grace = %d, want 1", got)
	}
	now := metav1.NewTime(h.clock.Now())
	for _, ct := range allConditions {
		c := h.condition("new", ct)
		if c.Status != v1.ConditionUnknown || c.Reason != reasonNeverUpdated || c.Message != messageNeverUpdated {
			t.Errorf("%s = %s/%s/%q, want Unknown/%s/%q", ct, c.Status, c.Reason, c.Message, reasonNeverUpdated, messageNeverUpdated)
		}
		if !c.LastHeartbeatTime.Equal(&node.CreationTimestamp) || !c.LastTransitionTime.Equal(&now) {
			t.Errorf("%s heartbeat %v transition %v, want creation %v and now %v", ct, c.LastHeartbeatTime, c.LastTransitionTime, node.CreationTimestamp, now)
		}
	}

	// The Ready condition the controller added is not the node's heartbeat: the node
	// stays decided and nothing is written again.
	for range 4 {
		h.step(5 * time.Second)
		h.sweep()
	}
	if got := h.statusWrites(); got != 1 {
		t.Errorf("status writes after more sweeps = %d, want still 1", got)
	}
	if _, ok := h.ctrl.nextDeadline(); ok {
		t.Error("a decided node still has a deadline")
	}
}

func TestNeverPostedConditionsAddedAsNeverUpdated(t *testing.T) {
	h := newHarness(t)
	h.newNode("partial", v1.NodeReady) // posted Ready only
	h.sweep()
	h.step(50 * time.Second) // posted Ready: the normal grace applies
	h.sweep()

	if c := h.condition("partial", v1.NodeReady); c.Status != v1.ConditionUnknown || c.Reason != reasonUnknown {
		t.Errorf("Ready = %s/%s, want Unknown/%s", c.Status, c.Reason, reasonUnknown)
	}
	for _, ct := range allConditions[1:] {
		if c := h.condition("partial", ct); c.Status != v1.ConditionUnknown || c.Reason != reasonNeverUpdated || c.Message != messageNeverUpdated {
			t.Errorf("%s = %s/%s/%q, want Unknown/%s/%q", ct, c.Status, c.Reason, c.Message, reasonNeverUpdated, messageNeverUpdated)
		}
	}
}

func TestLeaseOnlyHeartbeatKeepsNodeHealthy(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.renewLease("n1")
	h.sweep()

	// Five minutes of Lease renewals every 10 s while the Ready heartbeat stays put.
	for i := 1; i <= 60; i++ {
		h.step(5 * time.Second)
		if i%2 == 0 {
			h.renewLease("n1")
		}
		h.sweep()
	}
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("node renewing its Lease was written %d times", got)
	}
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %s, want True", c.Status)
	}

	// Renewals stop: marked a grace period after the last one, not before.
	h.step(45 * time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("written %d times 45 s after the last renewal", got)
	}
	h.step(5 * time.Second)
	h.sweep()
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionUnknown {
		t.Fatalf("Ready = %s 50 s after the last renewal, want Unknown", c.Status)
	}
}

func TestNoRewriteOfConditionsAlreadyUnknown(t *testing.T) {
	h := newHarness(t)
	node := h.newNode("n1", allConditions...)
	// A previous controller instance marked it already.
	markConditionsUnknown(&node.Status, node.CreationTimestamp, metav1.NewTime(h.nodeClock))
	h.putNode(node)
	h.sweep()
	h.step(time.Minute)
	h.sweep()
	h.step(5 * time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("conditions already Unknown were written %d times", got)
	}
	if _, ok := h.ctrl.nextDeadline(); ok {
		t.Error("a node decided Unknown still arms a deadline")
	}

	// Someone sets one condition back without a heartbeat: only that one is corrected.
	node = h.node("n1")
	readyBefore := node.Status.Conditions[conditionIndex(node.Status.Conditions, v1.NodeReady)]
	node.Status.Conditions[conditionIndex(node.Status.Conditions, v1.NodeDiskPressure)].Status = v1.ConditionFalse
	h.putNode(node)
	h.step(5 * time.Second)
	h.sweep()
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes = %d, want 1 to correct DiskPressure", got)
	}
	if c := h.condition("n1", v1.NodeDiskPressure); c.Status != v1.ConditionUnknown {
		t.Errorf("DiskPressure = %s, want Unknown", c.Status)
	}
	if c := h.condition("n1", v1.NodeReady); !c.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("Ready rewritten: transition %v, was %v", c.LastTransitionTime, readyBefore.LastTransitionTime)
	}
}

func TestReturningNodeIsNotOverwritten(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.renewLease("n1")
	h.sweep()
	h.step(50 * time.Second)
	h.sweep()
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionUnknown {
		t.Fatalf("Ready = %s, want Unknown before the node returns", c.Status)
	}

	// plinthd comes back: it posts Ready=True itself, then heartbeats through its Lease.
	h.step(3 * time.Second)
	h.postStatus("n1")
	h.renewLease("n1")
	h.step(2 * time.Second)
	h.sweep()
	if !strings.Contains(h.logs.String(), "node heartbeat resumed") {
		t.Errorf("recovery not logged; logs:\n%s", h.logs)
	}
	for i := 1; i <= 30; i++ {
		h.step(5 * time.Second)
		if i%2 == 0 {
			h.renewLease("n1")
		}
		h.sweep()
	}
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes = %d, want only the first Unknown", got)
	}
	for _, ct := range allConditions {
		if c := h.condition("n1", ct); c.Status == v1.ConditionUnknown {
			t.Errorf("%s is Unknown while the node heartbeats", ct)
		}
	}

	// And when it goes silent again it is marked again.
	h.step(50 * time.Second)
	h.sweep()
	if got, want := h.metric(unknownTotal), 2.0; got != want {
		t.Errorf("%s = %v, want %v", unknownTotal, got, want)
	}
}

func TestConflictRefetchesAndRetries(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.sweep()
	h.onStatusUpdate(func(n int, _ k8stesting.UpdateAction) (bool, error) {
		if n == 1 {
			return true, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale resourceVersion"))
		}
		return false, nil
	})
	h.step(50 * time.Second)
	gets := h.actions("get")
	h.sweep()
	if got := h.statusWrites(); got != 2 {
		t.Fatalf("status writes = %d, want 2 (conflict, then retry)", got)
	}
	// The status write refetches once; taint writes in the same sweep read the node
	// fresh too, so only a lower bound is the status path's.
	if got := h.actions("get") - gets; got < 1 {
		t.Errorf("node fetched %d times after the conflict, want a refetch", got)
	}
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionUnknown {
		t.Errorf("Ready = %s after retry, want Unknown", c.Status)
	}
	if got := h.metric(unknownTotal); got != 1 {
		t.Errorf("%s = %v, want 1", unknownTotal, got)
	}
}

func TestConflictWithReturningNodeBacksOff(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.sweep()
	h.step(50 * time.Second)
	// The write races plinthd coming back: its status lands first, ours conflicts.
	h.onStatusUpdate(func(int, k8stesting.UpdateAction) (bool, error) {
		node := h.node("n1")
		for i := range node.Status.Conditions {
			node.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(h.nodeClock.Add(time.Second))
		}
		if err := h.client.Tracker().Update(nodesResource, node, ""); err != nil {
			return true, err
		}
		return true, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("stale resourceVersion"))
	})
	h.sweep()
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes = %d, want 1: no retry over a fresh heartbeat", got)
	}
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %s, want the node's True", c.Status)
	}
	if got := h.metric(unknownTotal); got != 0 {
		t.Errorf("%s = %v, want 0", unknownTotal, got)
	}
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(h.clock.Now().Add(50*time.Second)) {
		t.Errorf("deadline after the refetched heartbeat = %v, %v; want %v", next, ok, h.clock.Now().Add(50*time.Second))
	}
}

func TestFailedWriteIsRetriedBySweep(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.sweep()
	h.onStatusUpdate(func(n int, _ k8stesting.UpdateAction) (bool, error) {
		if n == 1 {
			return true, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil
	})
	h.step(50 * time.Second)
	h.sweep()
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %s after a failed write", c.Status)
	}
	if got := h.metric(unknownTotal); got != 0 {
		t.Errorf("%s = %v after a failed write, want 0", unknownTotal, got)
	}
	h.step(5 * time.Second)
	h.sweep()
	if c := h.condition("n1", v1.NodeReady); c.Status != v1.ConditionUnknown {
		t.Fatalf("Ready = %s after the next sweep, want Unknown", c.Status)
	}
}

func TestDeletedNodesAreForgotten(t *testing.T) {
	h := newHarness(t)
	h.newNode("a", allConditions...)
	h.newNode("b", allConditions...)
	c := h.newNode("c", allConditions...)
	h.sweep()
	if got := h.metric(nodesGauge); got != 3 {
		t.Fatalf("%s = %v, want 3", nodesGauge, got)
	}

	h.deleteNode("a")
	h.sweep()
	// A delete seen only as a tombstone by the informer.
	h.ctrl.onNodeDelete(cache.DeletedFinalStateUnknown{Key: "c", Obj: c})

	h.ctrl.mu.Lock()
	_, hasA := h.ctrl.nodes["a"]
	_, hasB := h.ctrl.nodes["b"]
	_, hasC := h.ctrl.nodes["c"]
	h.ctrl.mu.Unlock()
	if hasA || !hasB || hasC {
		t.Errorf("records a=%v b=%v c=%v, want only b", hasA, hasB, hasC)
	}
	if got := h.metric(nodesGauge); got != 1 {
		t.Errorf("%s = %v, want 1", nodesGauge, got)
	}
}

func TestEventHandlersStampHeartbeatsOnArrival(t *testing.T) {
	h := newHarness(t)
	starting := h.newNode("starting")
	running := h.newNode("running", allConditions...)
	h.ctrl.onNode(starting) // first seen at t0: deadline t0+60
	h.step(10 * time.Second)
	h.ctrl.onNode(running) // first seen at t0+10: deadline t0+60 too
	h.renewLease("running")

	h.step(5 * time.Second)
	h.renewLease("running")
	lease, err := h.ctrl.leaseLister.Leases(v1.NamespaceNodeLease).Get("running")
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl.onLease(lease) // renewal seen at t0+15: deadline t0+65
	other := lease.DeepCopy()
	other.Namespace = "default"
	other.Spec.RenewTime = ptr(metav1.NewMicroTime(h.nodeClock.Add(time.Hour)))
	h.step(5 * time.Second)
	h.ctrl.onLease(other) // same name, wrong namespace: not a heartbeat

	next, ok := h.ctrl.nextDeadline()
	if want := t0.Add(60 * time.Second); !ok || !next.Equal(want) {
		t.Fatalf("earliest deadline = %v, %v; want %v (the starting node's)", next, ok, want)
	}
	h.ctrl.mu.Lock()
	got := h.ctrl.nodes["running"].deadline(h.ctrl.opts)
	h.ctrl.mu.Unlock()
	if want := t0.Add(65 * time.Second); !got.Equal(want) {
		t.Errorf("running node's deadline = %v, want %v (stamped when the renewal arrived)", got, want)
	}
	select {
	case <-h.ctrl.wake:
	default:
		t.Error("a new node did not wake Run to recompute its deadline")
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	factory := informers.NewSharedInformerFactory(h.client, 0)
	nodes, leases := factory.Core().V1().Nodes(), factory.Coordination().V1().Leases()

	if _, err := New(Config{Client: h.client, Leases: leases, Clock: h.clock, Options: DefaultOptions()}); err == nil {
		t.Error("nil node informer accepted")
	}
	opts := DefaultOptions()
	opts.GracePeriod = -time.Second
	if _, err := New(Config{Client: h.client, Nodes: nodes, Leases: leases, Clock: h.clock, Options: opts}); err == nil || !strings.Contains(err.Error(), "GracePeriod") {
		t.Errorf("negative GracePeriod: err = %v, want one naming GracePeriod", err)
	}
	// The harness's controller already registered its metrics with h.reg.
	if _, err := New(Config{Client: h.client, Nodes: nodes, Leases: leases, Clock: h.clock, Registerer: h.reg, Options: DefaultOptions()}); err == nil {
		t.Error("registering the metrics twice went unreported")
	}
}

func TestLeaseRenewalBetweenDecisionAndWriteWins(t *testing.T) {
	h := newHarness(t)
	h.newNode("n1", allConditions...)
	h.renewLease("n1")
	h.sweep()
	h.step(50 * time.Second)
	cached, err := h.ctrl.nodeLister.Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	// The sweep would decide n1 silent now; a renewal arrives before the write.
	h.renewLease("n1")
	lease, err := h.ctrl.leaseLister.Leases(v1.NamespaceNodeLease).Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl.onLease(lease)
	if _, err := h.ctrl.markUnknown(h.ctx, cached); err != nil {
		t.Fatal(err)
	}
	if got := h.statusWrites(); got != 0 {
		t.Fatalf("status writes = %d, want none over a fresh renewal", got)
	}
	// Without the renewal the same call writes: the check above can fail.
	h.step(50 * time.Second)
	if _, err := h.ctrl.markUnknown(h.ctx, cached); err != nil {
		t.Fatal(err)
	}
	if got := h.statusWrites(); got != 1 {
		t.Fatalf("status writes = %d once the renewal is old, want 1", got)
	}
}

// A sweep over healthy nodes whose taints are already right sends nothing to the API.
// Reading every node fresh before deciding there was nothing to write made a sweep of
// 1,000 nodes a thousand GETs, about ten seconds behind the loopback client's rate
// limit, during which silent nodes waited to be marked.
func TestSweepOfSettledNodesSendsNoRequests(t *testing.T) {
	h := newHarness(t)
	names := h.newNodesIn("settled", "", 200)
	for _, name := range names {
		h.renewLease(name)
	}
	h.sweep()
	h.step(10 * time.Second)
	for _, name := range names {
		h.renewLease(name)
	}
	before := len(h.client.Actions())
	h.sweep()
	if got := h.client.Actions()[before:]; len(got) != 0 {
		t.Fatalf("sweep of 200 healthy nodes sent %d requests, want none; first: %s %s", len(got), got[0].GetVerb(), got[0].GetResource())
	}
	// A node that does need a taint still gets it, written from a fresh read.
	h.report(names[0], v1.ConditionFalse)
	gets := h.actions("get")
	h.sweep()
	if got := h.noSchedule(names[0]); !slices.Contains(got, v1.TaintNodeNotReady) {
		t.Fatalf("NoSchedule taints of the not-ready node: %v, want %s", got, v1.TaintNodeNotReady)
	}
	if h.actions("get") == gets {
		t.Error("the taint write did not read the node fresh")
	}
}
