package plinthd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"

	"github.com/plinth/plinth/daemon/admission"
	"github.com/plinth/plinth/daemon/node"
	"github.com/plinth/plinth/daemon/shutdown"
)

type fakePressure struct{ changed chan struct{} }

func (fakePressure) Conditions() []corev1.NodeCondition {
	return node.NoPressure{}.Conditions()
}
func (f fakePressure) Changed() <-chan struct{} { return f.changed }

type fakeShutdownState struct {
	down    atomic.Bool
	changed chan struct{}
}

func (f *fakeShutdownState) ShuttingDown() bool       { return f.down.Load() }
func (f *fakeShutdownState) Changed() <-chan struct{} { return f.changed }

func readyOf(conds []corev1.NodeCondition) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == corev1.NodeReady {
			return &conds[i]
		}
	}
	return nil
}

func receives(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func TestShutdownConditionsTurnReadyFalseWhileShuttingDown(t *testing.T) {
	p := fakePressure{changed: make(chan struct{}, 1)}
	s := &fakeShutdownState{changed: make(chan struct{}, 1)}
	c := newShutdownConditions(p, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.forward(ctx) }()
	defer func() { cancel(); <-done }()

	if r := readyOf(c.Conditions()); r != nil {
		t.Errorf("Ready %+v supplied while not shutting down; the agent's own must stand", r)
	}
	if n := len(c.Conditions()); n != 3 {
		t.Errorf("%d conditions, want the 3 pressure ones", n)
	}
	s.down.Store(true)
	s.changed <- struct{}{}
	receives(t, c.Changed(), "change after the shutdown began")
	r := readyOf(c.Conditions())
	if r == nil || r.Status != corev1.ConditionFalse || r.Reason != node.ReasonNotReady || r.Message != "node is shutting down" {
		t.Errorf("Ready while shutting down = %+v, want False, %s, %q", r, node.ReasonNotReady, "node is shutting down")
	}
	p.changed <- struct{}{}
	receives(t, c.Changed(), "pressure change passed on")
	s.down.Store(false)
	s.changed <- struct{}{}
	receives(t, c.Changed(), "change after the cancellation")
	if r := readyOf(c.Conditions()); r != nil {
		t.Errorf("Ready %+v still supplied after the cancellation", r)
	}
}

func TestMarkShutdownTerminatedAsKubelet(t *testing.T) {
	now := time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)
	st := corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}
	markShutdownTerminated(&st, now)
	markShutdownTerminated(&st, now) // twice: still one DisruptionTarget
	if st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("reason %q message %q", st.Reason, st.Message)
	}
	n := 0
	for _, c := range st.Conditions {
		if c.Type == corev1.DisruptionTarget {
			n++
			if c.Status != corev1.ConditionTrue || c.Reason != "TerminationByKubelet" || !c.LastTransitionTime.Time.Equal(now) {
				t.Errorf("DisruptionTarget %+v", c)
			}
		}
	}
	if n != 1 || len(st.Conditions) != 2 {
		t.Errorf("conditions %+v, want Ready kept and one DisruptionTarget", st.Conditions)
	}
}

// While the node shuts down no new pod is admitted (kubelet's NodeShutdown); pods
// admitted before stay.
func TestPodGateRefusesNewPodsWhileShuttingDown(t *testing.T) {
	node := gateNode()
	failed := map[string]corev1.PodStatus{}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	g := newPodGate(func(context.Context) *corev1.Node { return node },
		func(p *corev1.Pod, st corev1.PodStatus) { failed[p.Name] = st }, func() time.Time { return now })
	var down atomic.Bool
	g.shuttingDown = down.Load
	before := gatePod("before", "100m", now.Add(-time.Minute))
	if got := names(g.filter(context.Background(), []*corev1.Pod{before}, false)); len(got) != 1 {
		t.Fatalf("admitted %v before the shutdown", got)
	}
	down.Store(true)
	late := gatePod("late", "100m", now)
	got := names(g.filter(context.Background(), []*corev1.Pod{before, late}, false))
	if len(got) != 1 || got[0] != "before" {
		t.Errorf("runtime sees %v, want only the pod admitted before the shutdown", got)
	}
	st, ok := failed["late"]
	if !ok || st.Phase != corev1.PodFailed || st.Reason != admission.ReasonNodeShutdown || st.Message != "Pod was rejected as the node is shutting down." {
		t.Errorf("late pod's status %+v (written %v), want Failed/NodeShutdown", st, ok)
	}
	if shutdown.ReasonTerminated != admission.ReasonTerminated || shutdown.MessageTerminated != admission.MessageTerminated {
		t.Error("daemon/shutdown and daemon/admission disagree on the terminated reason or message")
	}
}

func gateNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}}}
}

// A pod stopped by the shutdown counts as done only once its Failed status is in the
// API: waitWritten returns when it is written, and not while writes fail.
func TestPodStatusWaitWritten(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := fake.NewClientset(p)
	var failing, invalid atomic.Bool
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch {
		case a.GetSubresource() != "status":
		case invalid.Load():
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web",
				field.ErrorList{field.Invalid(field.NewPath("status", "phase"), "Succeeded", "may not change")})
		case failing.Load():
			return true, nil, errors.New("control service away")
		}
		return false, nil, nil
	})
	w := newPodStatusWriter(nodeclienttest.FromClientset(cs), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	defer func() { cancel(); <-done }()

	st := corev1.PodStatus{Phase: corev1.PodFailed}
	markShutdownTerminated(&st, time.Now())
	w.report(p, st)
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if !w.waitWritten(wctx, p.UID) {
		t.Fatal("waitWritten gave up on a status the API accepts")
	}
	got, err := cs.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.PodFailed || got.Status.Reason != shutdown.ReasonTerminated {
		t.Fatalf("pod in the API after waitWritten: %+v, %v", got.Status, err)
	}

	failing.Store(true)
	st.Message = "another"
	w.report(p, st)
	short, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer scancel()
	if w.waitWritten(short, p.UID) {
		t.Error("waitWritten returned while the status could not be written")
	}
	if got := w.unfinished([]*corev1.Pod{p}); len(got) != 0 {
		t.Error("a pod last reported Failed counts as unfinished: graceful shutdown would stop it again")
	}

	// Refused for good (the API keeps a terminal phase): dropped, not waited for.
	invalid.Store(true)
	st.Phase = corev1.PodSucceeded
	w.report(p, st)
	if !w.waitWritten(wctx, p.UID) {
		t.Error("waitWritten still waits for a status the API refused as invalid")
	}
}
