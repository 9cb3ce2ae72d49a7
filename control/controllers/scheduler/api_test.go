package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/scheduler"
)

// The API test runs the scheduler against the real API server over a real embedded
// etcd: that its bindings go through pods/binding as the registry serves it, and that
// its condition and events are accepted. It runs on the real clock so its queue works;
// timeouts only bound round trips.
const apiTimeout = 30 * time.Second

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func createNode(t *testing.T, client kubernetes.Interface, name, cpu string, taints ...v1.Taint) {
	t.Helper()
	ctx := t.Context()
	n, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods: resource.MustParse("110")}
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Posted"}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, client kubernetes.Interface, name, cpu string) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestSchedulerBindsAndExplainsThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	createNode(t, client, "small", "2")
	createNode(t, client, "dedicated", "32", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})
	createPod(t, client, "web", "1")
	createPod(t, client, "huge", "16")

	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer events.Shutdown()
	factory := informers.NewSharedInformerFactory(client, 0)
	sched, err := scheduler.New(scheduler.Config{Client: client, Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(),
		Clock: clock.RealClock{}, Options: scheduler.DefaultOptions(),
		Recorder: events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "default-scheduler"})})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { _ = sched.Run(runCtx); close(done) }()

	eventually(t, "web to be bound to small", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := scheduledCondition(p)
		return p.Spec.NodeName == "small" && c != nil && c.Status == v1.ConditionTrue, fmt.Sprintf("node %q, condition %+v", p.Spec.NodeName, c)
	})
	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: db}."
	eventually(t, "huge to be unschedulable", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := scheduledCondition(p)
		return p.Spec.NodeName == "" && c != nil && c.Status == v1.ConditionFalse && c.Reason == "Unschedulable" && c.Message == want,
			fmt.Sprintf("node %q, condition %+v", p.Spec.NodeName, c)
	})
	eventually(t, "the Scheduled and FailedScheduling events", func() (bool, string) {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, e := range list.Items {
			got[e.InvolvedObject.Name+"/"+e.Reason] = e.Type + " " + e.Message
		}
		return got["web/Scheduled"] == "Normal Successfully assigned default/web to small" &&
			got["huge/FailedScheduling"] == "Warning "+want, fmt.Sprint(got)
	})

	// A bigger node arrives: huge is bound to it after its backoff.
	createNode(t, client, "big", "64")
	eventually(t, "huge to be bound to big", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName == "big", "node " + p.Spec.NodeName
	})
}
