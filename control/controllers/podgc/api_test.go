package podgc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/podgc"
)

// The API test runs the collector against the real API server over a real embedded
// etcd, on a fake clock: what it checks is that its writes (pods/status, deletes with
// grace 0 and a UID precondition) are ones the registry accepts and that they remove
// the pods. Timeouts bound informer and API round trips; the collector's time is the
// fake clock.
const apiTimeout = 30 * time.Second

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type fixture struct {
	t      *testing.T
	client kubernetes.Interface
}

func (f fixture) pod(name, node string, finalizers ...string) *v1.Pod {
	f.t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: finalizers},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := f.client.CoreV1().Pods("default").Create(f.t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

func (f fixture) finish(p *v1.Pod, phase v1.PodPhase) {
	f.t.Helper()
	p.Status.Phase = phase
	if _, err := f.client.CoreV1().Pods("default").UpdateStatus(f.t.Context(), p, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("setting pod %s %s: %v", p.Name, phase, err)
	}
}

func (f fixture) get(name string) *v1.Pod {
	f.t.Helper()
	p, err := f.client.CoreV1().Pods("default").Get(f.t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f fixture) delete(name string) {
	f.t.Helper()
	if err := f.client.CoreV1().Pods("default").Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

func TestPodGCThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	f := fixture{t: t, client: client}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)

	// A node that is down and that the operator marked out-of-service.
	down, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "down"},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	down.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown"}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, down, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Four terminated pods, created in name order, over a threshold of 2.
	for _, name := range []string{"done-a", "done-b", "done-c", "done-d"} {
		f.finish(f.pod(name, "down"), v1.PodSucceeded)
	}
	// A terminating pod on the out-of-service node, and one that is not terminating.
	f.pod("shutdown-victim", "down")
	f.delete("shutdown-victim")
	if p := f.get("shutdown-victim"); p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod on a node should wait for its node after a graceful delete: %+v", p)
	}
	f.pod("shutdown-bystander", "down")
	// A pod bound to a node that never existed.
	orphan := f.pod("orphan", "ghost")
	// A terminating unbound pod: only its finalizer holds it.
	f.pod("held", "", "example.com/hold")
	f.delete("held")

	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: orphan.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	opts := podgc.DefaultOptions()
	opts.TerminatedPodThreshold = 2
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := podgc.New(podgc.Config{Client: client, Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(),
		Clock: clk, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { done <- ctrl.Run(runCtx) }()

	// The first pass: threshold, out-of-service and the unbound terminating pod.
	eventually(t, "the two oldest terminated pods to go", func() bool { return f.get("done-a") == nil && f.get("done-b") == nil })
	if f.get("done-c") == nil || f.get("done-d") == nil {
		t.Fatal("terminated pods within the threshold were deleted")
	}
	eventually(t, "the terminating pod on the out-of-service node to be force-deleted", func() bool { return f.get("shutdown-victim") == nil })
	eventually(t, "the unbound terminating pod to be marked Failed", func() bool {
		p := f.get("held")
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p := f.get("shutdown-bystander"); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("a pod not terminating on the out-of-service node was deleted: %+v", p)
	}

	// The orphan: quarantined from the first pass; 39 s on it is still there.
	clk.Step(39 * time.Second)
	time.Sleep(200 * time.Millisecond) // a wrong early deletion would have shown by now
	if f.get("orphan") == nil {
		t.Fatal("orphan deleted before its 40 s quarantine ended")
	}
	clk.Step(time.Second)
	eventually(t, "the orphan to be deleted after its quarantine", func() bool { return f.get("orphan") == nil })

	// Its last state before the delete carried DisruptionTarget and phase Failed.
	var last *v1.Pod
	var events []watch.EventType
	timeout := time.After(apiTimeout)
	for !slices.Contains(events, watch.Deleted) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed; events on the orphan %v", events)
			}
			if p, isPod := ev.Object.(*v1.Pod); isPod && p.Name == "orphan" {
				events = append(events, ev.Type)
				last = p
			}
		case <-timeout:
			t.Fatalf("timed out; events on the orphan %v", events)
		}
	}
	var cond *v1.PodCondition
	for i := range last.Status.Conditions {
		if last.Status.Conditions[i].Type == v1.DisruptionTarget {
			cond = &last.Status.Conditions[i]
		}
	}
	if last.Status.Phase != v1.PodFailed || cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != "DeletionByPodGC" {
		t.Errorf("orphan deleted as phase %s with DisruptionTarget %+v; want Failed, True/DeletionByPodGC", last.Status.Phase, cond)
	}

	// Let the held pod go, so the namespace is clean.
	held := f.get("held")
	held.Finalizers = nil
	if _, err := client.CoreV1().Pods("default").Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held pod to go once its finalizer is removed", func() bool { return f.get("held") == nil })
}
