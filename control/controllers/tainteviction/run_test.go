package tainteviction

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

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

// TestRunDeletesOnTimer runs the controller on started informers: the deletion comes
// from its own timer on the fake clock, at the deadline and not before.
func TestRunDeletesOnTimer(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	pod := newPod("web", "n1", tolerate(v1.TaintNodeUnreachable, ptr[int64](30)))
	client := fake.NewClientset(node, pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	ctrl, err := New(Config{Client: client, Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(),
		Clock: clk, Registerer: prometheus.NewRegistry()})
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

	tainted := node.DeepCopy()
	tainted.Spec.Taints = []v1.Taint{taintAt(v1.TaintNodeUnreachable, t0)}
	if _, err := client.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion timer", func() bool { return clk.HasWaiters() })
	clk.Step(29 * time.Second)
	time.Sleep(50 * time.Millisecond) // give a wrong early deletion the chance to show
	if _, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod gone 29 s after the taint: %v", err)
	}
	eventually(t, "the timer to be re-armed", func() bool { return clk.HasWaiters() })
	clk.Step(time.Second)
	eventually(t, "the pod to be deleted at 30 s", func() bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err != nil
	})
}
