package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

// harness runs a Scheduler's informers over a fake API on a fake clock, and calls
// scheduleOne itself, so each test decides when an attempt happens.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	sched  *Scheduler
	clock  *testingclock.FakeClock
	events *record.FakeRecorder
	// bindFails, when set, fails every binding with it.
	bindFails error
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	h := &harness{t: t, client: client, events: record.NewFakeRecorder(100),
		clock: testingclock.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))}
	// The fake API does not serve pods/binding; this does what the registry does.
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		if h.bindFails != nil {
			return true, nil, h.bindFails
		}
		b := a.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(podsResource, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		p.Spec.NodeName = b.Target.Name
		return true, b, client.Tracker().Update(podsResource, p, p.Namespace)
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	sched, err := New(Config{Client: client, Pods: factory.Core().V1().Pods(), Nodes: factory.Core().V1().Nodes(),
		Clock: h.clock, Registerer: prometheus.NewRegistry(), Recorder: h.events, Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	h.sched = sched
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(t.Context().Done(), sched.synced...) {
		t.Fatal("caches did not sync")
	}
	return h
}

func (h *harness) schedule(name string) error {
	h.t.Helper()
	return h.sched.scheduleOne(h.t.Context(), types.NamespacedName{Namespace: "default", Name: name})
}

func (h *harness) nodeOf(name string) string {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.Spec.NodeName
}

func (h *harness) event() string {
	h.t.Helper()
	select {
	case e := <-h.events.Events:
		return e
	default:
		h.t.Fatal("no event recorded")
		return ""
	}
}

// statusWrites counts pods/status updates so far.
func (h *harness) statusWrites() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestBindsToTheNodeThatFits(t *testing.T) {
	tainted := readyNode("n1")
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}
	h := newHarness(t, tainted, readyNode("n2"), newPod("web", "1", "1Gi"))
	if err := h.schedule("web"); err != nil {
		t.Fatal(err)
	}
	if got := h.nodeOf("web"); got != "n2" {
		t.Fatalf("bound to %q, want n2", got)
	}
	if e := h.event(); e != "Normal Scheduled Successfully assigned default/web to n2" {
		t.Fatalf("event %q", e)
	}
}

func TestPodsOfOtherSchedulersAndGatedPodsAreLeftAlone(t *testing.T) {
	other := newPod("other", "", "")
	other.Spec.SchedulerName = "my-scheduler"
	gated := newPod("gated", "", "")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	h := newHarness(t, readyNode("n1"), other, gated)
	for _, name := range []string{"other", "gated"} {
		if err := h.schedule(name); err != nil {
			t.Fatal(err)
		}
		if got := h.nodeOf(name); got != "" {
			t.Fatalf("%s bound to %q", name, got)
		}
	}
}

func TestPodsBeingBoundAreNotDoubleBooked(t *testing.T) {
	h := newHarness(t, readyNode("n1"), newPod("a", "3", ""), newPod("b", "3", ""))
	// No waiting for the cache between the two: the first counts as assumed.
	if err := h.schedule("a"); err != nil {
		t.Fatal(err)
	}
	if err := h.schedule("b"); err != nil {
		t.Fatal(err)
	}
	if h.nodeOf("a") != "n1" || h.nodeOf("b") != "" {
		t.Fatalf("a on %q, b on %q; want a on n1 and b nowhere", h.nodeOf("a"), h.nodeOf("b"))
	}
	h.event() // Scheduled a
	if e := h.event(); e != "Warning FailedScheduling 0/1 nodes are available: 1 Insufficient cpu." {
		t.Fatalf("event %q", e)
	}
}

func TestUnschedulablePodGetsConditionAndWaitsForANodeChange(t *testing.T) {
	h := newHarness(t, readyNode("n1"), newPod("big", "8", ""))
	if err := h.schedule("big"); err != nil {
		t.Fatal(err)
	}
	if e := h.event(); e != "Warning FailedScheduling 0/1 nodes are available: 1 Insufficient cpu." {
		t.Fatalf("event %q", e)
	}
	p, err := h.client.CoreV1().Pods("default").Get(t.Context(), "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cond *v1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != "Unschedulable" || !strings.Contains(cond.Message, "Insufficient cpu") {
		t.Fatalf("PodScheduled condition %+v", cond)
	}
	// Wait for the pod cache to show the condition, then try again: the same verdict
	// writes no status.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cached, err := h.sched.pods.Pods("default").Get("big")
		if err == nil && len(cached.Status.Conditions) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod cache did not see the condition")
		}
		time.Sleep(time.Millisecond)
	}
	writes := h.statusWrites()
	if err := h.schedule("big"); err != nil {
		t.Fatal(err)
	}
	if h.statusWrites() != writes {
		t.Fatal("an unchanged verdict wrote the status again")
	}

	// Parked: nothing is queued until a node changes, and then only after the backoff
	// of the second failure (2 s). (The informer queued the pod when it first saw it;
	// this test runs the attempts itself.)
	h.drainQueue()
	if h.sched.queue.Len() != 0 {
		t.Fatalf("%d queued before any change", h.sched.queue.Len())
	}
	if _, err := h.client.CoreV1().Nodes().Create(t.Context(), func() *v1.Node {
		n := readyNode("n2")
		n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("16")
		return n
	}(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for h.parkedCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the new node did not wake the parked pod")
		}
		time.Sleep(time.Millisecond)
	}
	h.clock.Step(1999 * time.Millisecond)
	if h.sched.queue.Len() != 0 {
		t.Fatal("queued before its backoff passed")
	}
	h.clock.Step(time.Millisecond)
	deadline = time.Now().Add(10 * time.Second)
	for h.sched.queue.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("not queued once its backoff passed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := h.schedule("big"); err != nil {
		t.Fatal(err)
	}
	if got := h.nodeOf("big"); got != "n2" {
		t.Fatalf("bound to %q, want n2", got)
	}
}

func (h *harness) drainQueue() {
	for h.sched.queue.Len() > 0 {
		key, _ := h.sched.queue.Get()
		h.sched.queue.Done(key)
	}
}

func (h *harness) parkedCount() int {
	h.sched.mu.Lock()
	defer h.sched.mu.Unlock()
	return len(h.sched.parked)
}

func TestBackoffDoublesToTheMaximum(t *testing.T) {
	s := &Scheduler{opts: DefaultOptions()}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, s.backoff(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoffs %v, want %v", got, want)
		}
	}
}

func TestFailedBindingIsReportedAndForgotten(t *testing.T) {
	h := newHarness(t, readyNode("n1"), newPod("a", "3", ""), newPod("b", "3", ""))
	h.bindFails = errors.New("etcd is on fire")
	if err := h.schedule("a"); err == nil {
		t.Fatal("a failed binding returned no error to retry")
	}
	if e := h.event(); !strings.HasPrefix(e, "Warning FailedScheduling Binding rejected") {
		t.Fatalf("event %q", e)
	}
	h.bindFails = nil
	// The failed binding's room is free again.
	if err := h.schedule("b"); err != nil {
		t.Fatal(err)
	}
	if got := h.nodeOf("b"); got != "n1" {
		t.Fatalf("b bound to %q: the failed binding of a still holds room", got)
	}
}
