package podgc

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	t0            = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	podsResource  = v1.SchemeGroupVersion.WithResource("pods")
	nodesResource = v1.SchemeGroupVersion.WithResource("nodes")
)

// harness drives a Controller whose informers are never started: the test writes
// objects to the fake API and the caches itself, and calls collect at fake-clock times
// it chose, as Run would every CheckPeriod.
type harness struct {
	t      *testing.T
	ctx    context.Context
	clock  *testingclock.FakeClock
	client *fake.Clientset
	ctrl   *Controller
	pods   cache.Indexer
	nodes  cache.Indexer
	reg    *prometheus.Registry
	logs   *bytes.Buffer
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	podInf, nodeInf := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	clk := testingclock.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	logs := &bytes.Buffer{}
	ctrl, err := New(Config{Client: client, Pods: podInf, Nodes: nodeInf, Clock: clk, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: t.Context(), clock: clk, client: client, ctrl: ctrl,
		pods: podInf.Informer().GetIndexer(), nodes: nodeInf.Informer().GetIndexer(), reg: reg, logs: logs}
}

// collect applies the rules once, then lets the pod cache catch up with the fake API.
func (h *harness) collect() {
	h.t.Helper()
	h.ctrl.collect(h.ctx)
	h.resync()
}

// every steps the clock by d in CheckPeriod steps, collecting after each, as Run does.
func (h *harness) every(d time.Duration) {
	h.t.Helper()
	for elapsed := time.Duration(0); elapsed < d; elapsed += h.ctrl.opts.CheckPeriod {
		h.clock.Step(h.ctrl.opts.CheckPeriod)
		h.collect()
	}
}

// resync replaces the pod cache with the fake API's pods.
func (h *harness) resync() {
	h.t.Helper()
	objs, err := h.client.Tracker().List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	list := objs.(*v1.PodList)
	var items []any
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if err := h.pods.Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
}

// putNode writes the node to the API and, when cached, to the node cache.
func (h *harness) putNode(node *v1.Node, cached bool) {
	h.t.Helper()
	err := h.client.Tracker().Create(nodesResource, node, "")
	if apierrors.IsAlreadyExists(err) {
		err = h.client.Tracker().Update(nodesResource, node, "")
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if cached {
		if err := h.nodes.Update(node); err != nil {
			h.t.Fatal(err)
		}
	}
}

// deleteNode removes the node from the API and the cache.
func (h *harness) deleteNode(name string) {
	h.t.Helper()
	if err := h.client.Tracker().Delete(nodesResource, "", name); err != nil {
		h.t.Fatal(err)
	}
	if err := h.nodes.Delete(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		h.t.Fatal(err)
	}
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
}

func (h *harness) exists(name string) bool {
	_, err := h.client.Tracker().Get(podsResource, "default", name)
	return err == nil
}

// remaining is the names of the pods the fake API still has, sorted.
func (h *harness) remaining() []string {
	var out []string
	for _, obj := range h.pods.List() {
		out = append(out, obj.(*v1.Pod).Name)
	}
	slices.Sort(out)
	return out
}

// podActions is verb/subresource of every pod write, in order.
func (h *harness) podActions() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetResource() == podsResource && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+"/"+a.GetSubresource())
		}
	}
	return out
}

// actionsOn is verb/subresource of every write of the named pod, in order.
func (h *harness) actionsOn(name string) []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetResource() != podsResource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			if a.GetName() == name {
				out = append(out, "delete/")
			}
		case k8stesting.UpdateAction:
			if a.GetObject().(*v1.Pod).Name == name {
				out = append(out, "update/"+a.GetSubresource())
			}
		}
	}
	return out
}

// nodeGets counts live reads of nodes.
func (h *harness) nodeGets() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetResource() == nodesResource && a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

// deleteOptions are those of every pod delete, by pod name.
func (h *harness) deleteOptions() map[string]metav1.DeleteOptions {
	out := map[string]metav1.DeleteOptions{}
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource() == podsResource {
			out[d.GetName()] = d.GetDeleteOptions()
		}
	}
	return out
}

// statusWrites are the pods written through pods/status, by name (the last write).
func (h *harness) statusWrites() map[string]*v1.Pod {
	out := map[string]*v1.Pod{}
	for _, a := range h.client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" {
			p := u.GetObject().(*v1.Pod)
			out[p.Name] = p.DeepCopy()
		}
	}
	return out
}

func (h *harness) counter(name, namespace, reason string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == namespace && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func newPod(name, node string, phase v1.PodPhase, created time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{NodeName: node},
		Status:     v1.PodStatus{Phase: phase},
	}
}

// terminating marks the pod as a graceful DELETE would.
func terminating(p *v1.Pod, grace int64, finalizers ...string) *v1.Pod {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
	p.DeletionGracePeriodSeconds = &grace
	p.Finalizers = finalizers
	return p
}

func readyNode(name string, ready v1.ConditionStatus, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{Taints: taints},
		Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready}}},
	}
}

func conditionOf(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
