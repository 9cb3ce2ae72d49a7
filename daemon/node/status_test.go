package node

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// mutableConditions is a ConditionSource a test can change between ticks.
type mutableConditions struct {
	mu    sync.Mutex
	conds []corev1.NodeCondition
}

func (m *mutableConditions) Conditions() []corev1.NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]corev1.NodeCondition(nil), m.conds...)
}

func (m *mutableConditions) set(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.conds {
		if m.conds[i].Type == t {
			m.conds[i].Status, m.conds[i].Reason, m.conds[i].Message = status, reason, msg
		}
	}
}

func getNode(t *testing.T, e *testEnv) *corev1.Node {
	t.Helper()
	obj, err := e.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "node-a")
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	return obj.(*corev1.Node)
}

func condition(t *testing.T, n *corev1.Node, ct corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	i := conditionIndex(n.Status.Conditions, ct)
	if i < 0 {
		t.Fatalf("node has no %s condition: %+v", ct, n.Status.Conditions)
	}
	return n.Status.Conditions[i]
}

func statusUpdates(e *testEnv) int { return countActions(e.client, "update", "nodes", "status") }

// statusEnv is a registered node with a foreign condition and a status loop running.
func statusEnv(t *testing.T) (*testEnv, *mutableConditions) {
	t.Helper()
	src := &mutableConditions{conds: NoPressure{}.Conditions()}
	node := registeredNode()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"}}
	e := newTestEnv(t, testConfig(), src, node)
	e.start(t, e.agent.RunStatus)
	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("status wait = %s, want the 10s update frequency", got)
	}
	return e, src
}

// tick advances one status period and waits for the loop to finish its iteration.
func tick(t *testing.T, e *testEnv) {
	t.Helper()
	e.clock.Step(10 * time.Second)
	e.clock.nextWait(t)
}

func TestStatusFirstReport(t *testing.T) {
	e, _ := statusEnv(t)
	if got := statusUpdates(e); got != 1 {
		t.Fatalf("status updates after the first period = %d, want 1", got)
	}
	n := getNode(t, e)
	want := map[corev1.NodeConditionType][3]string{
		corev1.NodeReady:          {"True", ReasonReady, MessageReady},
		corev1.NodeMemoryPressure: {"False", ReasonHasSufficientMemory, MessageHasSufficientMemory},
		corev1.NodeDiskPressure:   {"False", ReasonHasNoDiskPressure, MessageHasNoDiskPressure},
		corev1.NodePIDPressure:    {"False", ReasonHasSufficientPID, MessageHasSufficientPID},
	}
	for ct, w := range want {
		c := condition(t, n, ct)
		if string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] {
			t.Errorf("%s = %s/%s/%q, want %s/%s/%q", ct, c.Status, c.Reason, c.Message, w[0], w[1], w[2])
		}
		if !c.LastHeartbeatTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s heartbeat %s transition %s, want both %s", ct, c.LastHeartbeatTime, c.LastTransitionTime, t0)
		}
	}
	if c := condition(t, n, corev1.NodeNetworkUnavailable); c.Reason != "RouteCreated" || !c.LastHeartbeatTime.IsZero() {
		t.Errorf("foreign condition changed: %+v", c)
	}
	assertQuantity(t, "capacity", n.Status.Capacity, corev1.ResourceCPU, "4")
	if got := metricValue(t, e.reg, "plinth_node_status_update_total", map[string]string{"result": "success"}); got != 1 {
		t.Errorf("status success count = %v, want 1", got)
	}
}

func TestStatusNotSentWhenUnchanged(t *testing.T) {
	e, _ := statusEnv(t)
	for i := 0; i < 5; i++ {
		tick(t, e)
	}
	if got := statusUpdates(e); got != 1 {
		t.Errorf("status updates after 5 unchanged periods = %d, want only the first", got)
	}
	if c := condition(t, getNode(t, e), corev1.NodeReady); !c.LastHeartbeatTime.Time.Equal(t0) {
		t.Errorf("heartbeat moved to %s without a report", c.LastHeartbeatTime)
	}
}

func TestStatusSentOnConditionChange(t *testing.T) {
	e, src := statusEnv(t)
	tick(t, e)
	src.set(corev1.NodeMemoryPressure, corev1.ConditionTrue, "PlinthdHasInsufficientMemory", "memory.available < 100Mi")
	tick(t, e) // t0+20s
	if got := statusUpdates(e); got != 2 {
		t.Fatalf("status updates = %d, want 2 (first report, then the change)", got)
	}
	n := getNode(t, e)
	at := t0.Add(20 * time.Second)
	mem := condition(t, n, corev1.NodeMemoryPressure)
	if mem.Status != corev1.ConditionTrue || mem.Reason != "PlinthdHasInsufficientMemory" || !mem.LastTransitionTime.Time.Equal(at) || !mem.LastHeartbeatTime.Time.Equal(at) {
		t.Errorf("MemoryPressure = %+v, want True, transition and heartbeat at %s", mem, at)
	}
	ready := condition(t, n, corev1.NodeReady)
	if !ready.LastTransitionTime.Time.Equal(t0) || !ready.LastHeartbeatTime.Time.Equal(at) {
		t.Errorf("Ready transition %s heartbeat %s; want transition kept at %s, heartbeat %s", ready.LastTransitionTime, ready.LastHeartbeatTime, t0, at)
	}

	// Same status, new message: reported, but the transition time stays.
	src.set(corev1.NodeMemoryPressure, corev1.ConditionTrue, "PlinthdHasInsufficientMemory", "memory.available < 50Mi")
	tick(t, e) // t0+30s
	if got := statusUpdates(e); got != 3 {
		t.Fatalf("status updates = %d, want 3 after a message change", got)
	}
	mem = condition(t, getNode(t, e), corev1.NodeMemoryPressure)
	if mem.Message != "memory.available < 50Mi" || !mem.LastTransitionTime.Time.Equal(at) {
		t.Errorf("MemoryPressure = %+v, want the new message with transition still %s", mem, at)
	}
}

// notifyingConditions is a ConditionSource that announces its changes.
type notifyingConditions struct {
	mutableConditions
	changed chan struct{}
}

func (n *notifyingConditions) Changed() <-chan struct{} { return n.changed }

// A source that announces a change gets it posted at once, without waiting for the
// status period: the clock does not move.
func TestStatusSentAtOnceWhenSourceAnnouncesChange(t *testing.T) {
	src := &notifyingConditions{mutableConditions: mutableConditions{conds: NoPressure{}.Conditions()}, changed: make(chan struct{}, 1)}
	e := newTestEnv(t, testConfig(), src, registeredNode())
	e.start(t, e.agent.RunStatus)
	e.clock.nextWait(t) // first report done, waiting for the period
	if got := statusUpdates(e); got != 1 {
		t.Fatalf("status updates after start = %d, want 1", got)
	}
	e.clock.Step(3 * time.Second) // part of a period: not due by the clock
	src.set(corev1.NodeMemoryPressure, corev1.ConditionTrue, "PlinthdHasInsufficientMemory", "allocatableMemory.available 62Mi < 100Mi")
	src.changed <- struct{}{}
	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("wait after the change = %s, want a fresh 10s period", got)
	}
	if got := statusUpdates(e); got != 2 {
		t.Fatalf("status updates after the announced change = %d, want 2", got)
	}
	mem := condition(t, getNode(t, e), corev1.NodeMemoryPressure)
	if at := t0.Add(3 * time.Second); mem.Status != corev1.ConditionTrue || !mem.LastTransitionTime.Time.Equal(at) {
		t.Errorf("MemoryPressure = %+v, want True with transition at %s", mem, at)
	}
}

func TestStatusSentWhenReportFrequencyElapses(t *testing.T) {
	e, _ := statusEnv(t)
	// 29 periods after the first report is 4m50s: nothing due yet.
	for i := 0; i < 29; i++ {
		tick(t, e)
	}
	if got := statusUpdates(e); got != 1 {
		t.Fatalf("status updates before 5 min = %d, want 1", got)
	}
	tick(t, e) // exactly 5 min after the first report
	if got := statusUpdates(e); got != 2 {
		t.Fatalf("status updates at 5 min = %d, want 2", got)
	}
	ready := condition(t, getNode(t, e), corev1.NodeReady)
	if want := t0.Add(5 * time.Minute); !ready.LastHeartbeatTime.Time.Equal(want) || !ready.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready heartbeat %s transition %s, want heartbeat %s and transition unchanged %s", ready.LastHeartbeatTime, ready.LastTransitionTime, want, t0)
	}
}

// The node lifecycle controller marks an unreachable node Unknown; the next status
// period must correct it, not the next 5-minute report.
func TestStatusCorrectsForeignReadyChange(t *testing.T) {
	e, _ := statusEnv(t)
	n := getNode(t, e).DeepCopy()
	i := conditionIndex(n.Status.Conditions, corev1.NodeReady)
	n.Status.Conditions[i].Status = corev1.ConditionUnknown
	n.Status.Conditions[i].Reason = "NodeStatusUnknown"
	if err := e.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
		t.Fatal(err)
	}
	tick(t, e)
	ready := condition(t, getNode(t, e), corev1.NodeReady)
	at := t0.Add(10 * time.Second)
	if ready.Status != corev1.ConditionTrue || ready.Reason != ReasonReady || !ready.LastTransitionTime.Time.Equal(at) {
		t.Errorf("Ready = %+v, want True again with transition %s", ready, at)
	}
}

func TestStatusSentWhenFactsChange(t *testing.T) {
	e, _ := statusEnv(t)
	n := getNode(t, e).DeepCopy()
	n.Status.Addresses = nil
	if err := e.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
		t.Fatal(err)
	}
	tick(t, e)
	if got := len(getNode(t, e).Status.Addresses); got != 2 {
		t.Errorf("addresses after a period = %d entries, want ours (2) restored", got)
	}
}

func TestStatusConflictRetriedAndErrorsCounted(t *testing.T) {
	e, _ := statusEnv(t)
	calls := 0
	e.client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		calls++
		if calls == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "node-a", nil)
		}
		return false, nil, nil
	})
	e.agent.conditions.(*mutableConditions).set(corev1.NodeDiskPressure, corev1.ConditionTrue, "PlinthdHasDiskPressure", "nodefs")
	tick(t, e)
	if calls != 2 {
		t.Errorf("status update calls = %d, want 2 (conflict, then retry)", calls)
	}
	if c := condition(t, getNode(t, e), corev1.NodeDiskPressure); c.Status != corev1.ConditionTrue {
		t.Errorf("DiskPressure = %s after a retried conflict, want True", c.Status)
	}

	e.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd unavailable")
	})
	tick(t, e)
	if got := metricValue(t, e.reg, "plinth_node_status_update_total", map[string]string{"result": "error"}); got != 1 {
		t.Errorf("status error count = %v, want 1", got)
	}
	if got := metricValue(t, e.reg, "plinth_node_status_update_total", map[string]string{"result": "success"}); got != 2 {
		t.Errorf("status success count = %v, want 2", got)
	}
}

func TestMergeConditionsTransitionTimes(t *testing.T) {
	old := metav1.NewTime(t0)
	now := metav1.NewTime(t0.Add(time.Minute))
	have := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "A", LastTransitionTime: old, LastHeartbeatTime: old},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "B", LastTransitionTime: old, LastHeartbeatTime: old},
	}
	want := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "A"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, Reason: "C"},
	}
	out, changed := mergeConditions(have, want, now)
	if !changed {
		t.Fatal("mergeConditions reported no change for a status flip")
	}
	if !out[0].LastTransitionTime.Equal(&old) || !out[1].LastTransitionTime.Equal(&now) {
		t.Errorf("transitions %s, %s; want %s (unchanged Ready) and %s (flipped MemoryPressure)", out[0].LastTransitionTime, out[1].LastTransitionTime, old, now)
	}
	if have[1].Status != corev1.ConditionFalse {
		t.Error("mergeConditions modified its input")
	}
	if _, changed := mergeConditions(out, want, now); changed {
		t.Error("merging the same conditions again reported a change")
	}
}

func TestDesiredConditionsSourceReadyWins(t *testing.T) {
	src := &mutableConditions{conds: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "RuntimeDown"}}}
	got := desiredConditions(src)
	if len(got) != 1 || got[0].Status != corev1.ConditionFalse {
		t.Errorf("desiredConditions = %+v, want only the source's Ready=False", got)
	}
	if got := desiredConditions(nil); len(got) != 1 || got[0].Type != corev1.NodeReady || got[0].Status != corev1.ConditionTrue {
		t.Errorf("desiredConditions(nil) = %+v, want Ready=True", got)
	}
}

// Status must not be posted before the Node exists; the loop keeps going.
func TestStatusWithoutNode(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	ctx := context.Background()
	sent, err := e.agent.syncStatus(ctx)
	if sent || err == nil {
		t.Fatalf("syncStatus without a Node = %v, %v; want not sent and an error", sent, err)
	}
	if want := "node node-a does not exist"; !contains(err.Error(), want) {
		t.Errorf("error = %v, want it to contain %q", err, want)
	}
}
