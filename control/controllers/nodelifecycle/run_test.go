package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// eventually polls cond in real time. The controller runs on a fake clock; the real
// time here only bounds how long its goroutines take to react to a step.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunMarksAtDeadline runs the whole controller on running informers with a
// MonitorPeriod of an hour, so only the per-node deadline can wake it in time.
func TestRunMarksAtDeadline(t *testing.T) {
	nodeClock := t0.Add(-time.Hour)
	hb := metav1.NewTime(nodeClock)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: hb, LastTransitionTime: hb},
		}},
	}
	renew := metav1.NewMicroTime(nodeClock)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: v1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &renew},
	}
	client := fake.NewClientset(node, lease)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	opts := DefaultOptions()
	opts.MonitorPeriod = time.Hour
	ctrl, err := New(Config{Client: client, Nodes: factory.Core().V1().Nodes(), Leases: factory.Coordination().V1().Leases(),
		Clock: clk, Registerer: prometheus.NewRegistry(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	// Stop everything before waiting for it, also when the test fails half-way.
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	go func() { done <- ctrl.Run(ctx) }()

	// The ticker and the node's deadline timer.
	eventually(t, "the deadline timer to be armed", func() bool { return clk.Waiters() >= 2 })

	// A Lease renewal at t0+30 arrives through the informer and moves the deadline.
	clk.Step(30 * time.Second)
	renewed := lease.DeepCopy()
	renewed.Spec.RenewTime = ptr(metav1.NewMicroTime(nodeClock.Add(30 * time.Second)))
	if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := t0.Add(80 * time.Second)
	eventually(t, "the renewal to move the deadline", func() bool {
		next, ok := ctrl.nextDeadline()
		return ok && next.Equal(want)
	})

	clk.Step(20 * time.Second) // t0+50: the old deadline; the node is not due
	clk.Step(30 * time.Second) // t0+80: due
	var ready v1.NodeCondition
	eventually(t, "Ready to become Unknown", func() bool {
		got, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		ready = got.Status.Conditions[conditionIndex(got.Status.Conditions, v1.NodeReady)]
		return ready.Status == v1.ConditionUnknown
	})
	if !ready.LastTransitionTime.Time.Equal(want) {
		t.Errorf("marked at %v, want at the deadline %v", ready.LastTransitionTime.Time, want)
	}

	// A deletion arrives through the informer and the record goes.
	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted node to be forgotten", func() bool {
		ctrl.mu.Lock()
		defer ctrl.mu.Unlock()
		return len(ctrl.nodes) == 0
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
		done <- nil // for the deferred wait
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// TestRunTaintsOnTheBucketsTimer runs the whole controller with a monitor period of an
// hour: after the first sweep, only the token bucket's timer can wake it to taint the
// second not-Ready node 10 s later, and a node update alone brings its taints in line.
func TestRunTaintsOnTheBucketsTimer(t *testing.T) {
	var objs []runtime.Object
	for i, ready := range []v1.ConditionStatus{v1.ConditionFalse, v1.ConditionFalse, v1.ConditionTrue, v1.ConditionTrue, v1.ConditionTrue} {
		hb := metav1.NewTime(t0)
		objs = append(objs, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
				{Type: v1.NodeReady, Status: ready, LastHeartbeatTime: hb, LastTransitionTime: hb},
			}},
		})
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	opts := DefaultOptions()
	opts.MonitorPeriod = time.Hour
	opts.GracePeriod = time.Hour
	ctrl, err := New(Config{Client: client, Nodes: factory.Core().V1().Nodes(), Leases: factory.Coordination().V1().Leases(),
		Pods: factory.Core().V1().Pods(), Clock: clk, Registerer: prometheus.NewRegistry(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	go func() { done <- ctrl.Run(ctx) }()

	noExecute := func() int {
		n := 0
		for i := 0; i < 2; i++ {
			node, err := client.CoreV1().Nodes().Get(ctx, fmt.Sprintf("n%d", i), metav1.GetOptions{})
			if err == nil && hasNoExecute(node, v1.TaintNodeNotReady) {
				n++
			}
		}
		return n
	}
	eventually(t, "the first node to be tainted", func() bool { return noExecute() == 1 })
	// The ticker and one timer, for the earlier of the node deadlines (an hour away)
	// and the bucket's next token (10 s away).
	eventually(t, "the bucket's timer", func() bool { return clk.Waiters() >= 2 })
	if got := noExecute(); got != 1 {
		t.Fatalf("%d tainted before the clock moved, want 1", got)
	}
	clk.Step(10 * time.Second)
	eventually(t, "the second node to be tainted at +10 s", func() bool { return noExecute() == 2 })

	// Cordoning n3 reaches the controller through the informer and is mirrored at once.
	n3, err := client.CoreV1().Nodes().Get(ctx, "n3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n3.Spec.Unschedulable = true
	if _, err := client.CoreV1().Nodes().Update(ctx, n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unschedulable taint", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "n3", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeUnschedulable })
	})
}
