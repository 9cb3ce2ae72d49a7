package podgc

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

// TestRunCollectsAtStartAndEveryCheckPeriod runs the controller on started informers:
// it collects once the caches are synced, then only when its ticker on the fake clock
// fires, every 20 s.
func TestRunCollectsAtStartAndEveryCheckPeriod(t *testing.T) {
	node := readyNode("n1", v1.ConditionTrue)
	client := fake.NewClientset(node, newPod("old", "n1", v1.PodSucceeded, t0), newPod("new", "n1", v1.PodSucceeded, t0.Add(time.Second)))
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	opts := DefaultOptions()
	opts.TerminatedPodThreshold = 1
	ctrl, err := New(Config{Client: client, Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(),
		Clock: clk, Registerer: prometheus.NewRegistry(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	go func() { done <- ctrl.Run(ctx) }()

	gone := func(name string) func() bool {
		return func() bool {
			_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err != nil
		}
	}
	eventually(t, "the first pass to delete the older terminated pod", gone("old"))
	eventually(t, "the ticker", clk.HasWaiters)
	finished := newPod("finished", "n1", v1.PodSucceeded, t0.Add(2*time.Second))
	if _, err := client.CoreV1().Pods("default").Create(ctx, finished, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache to see the new pod", func() bool {
		_, err := ctrl.podLister.Pods("default").Get("finished")
		return err == nil
	})
	clk.Step(19 * time.Second)
	time.Sleep(50 * time.Millisecond) // a pass before the period would show by now
	if gone("new")() {
		t.Fatal("a pass ran before the check period")
	}
	clk.Step(time.Second)
	eventually(t, "the pass at 20 s to delete the older of the two", gone("new"))
	if gone("finished")() {
		t.Error("the newest terminated pod, within the threshold, was deleted")
	}
}
