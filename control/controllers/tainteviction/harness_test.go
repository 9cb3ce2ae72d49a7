package tainteviction

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	t0            = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	podsResource  = v1.SchemeGroupVersion.WithResource("pods")
	nodesResource = v1.SchemeGroupVersion.WithResource("nodes")
)

// harness drives a Controller whose informers are never started: the test writes
// objects to the fake API and the caches, tells the controller through its event
// handlers, and calls processDirty and processDue at fake-clock times it chose.
type harness struct {
	t      *testing.T
	ctx    context.Context
	clock  *testingclock.FakeClock
	client *fake.Clientset
	ctrl   *Controller
	pods   cache.Indexer
	nodes  cache.Indexer
	events *record.FakeRecorder
	reg    *prometheus.Registry
	logs   *bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInf, nodeInf := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	clk := testingclock.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	logs := &bytes.Buffer{}
	events := record.NewFakeRecorder(1000)
	ctrl, err := New(Config{Client: client, Pods: podInf, Nodes: nodeInf, Clock: clk, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Recorder: events})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: t.Context(), clock: clk, client: client, ctrl: ctrl,
		pods: podInf.Informer().GetIndexer(), nodes: nodeInf.Informer().GetIndexer(), events: events, reg: reg, logs: logs}
}

// tick lets the controller react to what changed, then runs what is due, then lets the
// caches catch up with its writes.
func (h *harness) tick() {
	h.t.Helper()
	h.ctrl.processDirty()
	h.ctrl.processDue(h.ctx)
	h.resync()
}

// advance steps the clock by d in one-second steps, ticking after each, as Run would
// wake at each deadline (one-second resolution is enough for whole tolerationSeconds).
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	for elapsed := time.Duration(0); elapsed < d; elapsed += time.Second {
		h.clock.Step(time.Second)
		h.tick()
	}
}

// resync replaces the pod cache with the fake API's pods, telling the controller of
// deletions as the informer would.
func (h *harness) resync() {
	h.t.Helper()
	objs, err := h.client.Tracker().List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	list := objs.(*v1.PodList)
	live := map[string]bool{}
	for i := range list.Items {
		live[list.Items[i].Namespace+"/"+list.Items[i].Name] = true
	}
	for _, obj := range h.pods.List() {
		p := obj.(*v1.Pod)
		if !live[p.Namespace+"/"+p.Name] {
			if err := h.pods.Delete(p); err != nil {
				h.t.Fatal(err)
			}
			h.ctrl.onPod(p)
		}
	}
	for i := range list.Items {
		if err := h.pods.Update(&list.Items[i]); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) putNode(node *v1.Node) {
	h.t.Helper()
	err := h.client.Tracker().Create(nodesResource, node, "")
	if apierrors.IsAlreadyExists(err) {
		err = h.client.Tracker().Update(nodesResource, node, "")
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.nodes.Update(node); err != nil {
		h.t.Fatal(err)
	}
	h.ctrl.onNode(node)
}

// taintNode replaces the node's NoExecute taints.
func (h *harness) taintNode(name string, taints ...v1.Taint) {
	h.t.Helper()
	h.putNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}})
}

func (h *harness) putPod(pod *v1.Pod) {
	h.t.Helper()
	err := h.client.Tracker().Create(podsResource, pod, pod.Namespace)
	if apierrors.IsAlreadyExists(err) {
		err = h.client.Tracker().Update(podsResource, pod, pod.Namespace)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.pods.Update(pod); err != nil {
		h.t.Fatal(err)
	}
	h.ctrl.onPod(pod)
}

func newPod(name, node string, tolerations ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Tolerations: tolerations},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

func (h *harness) exists(name string) bool {
	_, err := h.client.Tracker().Get(podsResource, "default", name)
	return err == nil
}

func (h *harness) drainEvents() []string {
	var got []string
	for {
		select {
		case e := <-h.events.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

func taintAt(key string, at time.Time) v1.Taint {
	ta := metav1.NewTime(at)
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &ta}
}

func tolerate(key string, seconds *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func ptr[T any](v T) *T { return &v }

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }
