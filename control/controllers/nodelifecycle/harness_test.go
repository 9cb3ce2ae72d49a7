package nodelifecycle

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	nodesResource  = v1.SchemeGroupVersion.WithResource("nodes")
	podsResource   = v1.SchemeGroupVersion.WithResource("pods")
	leasesResource = coordinationv1.SchemeGroupVersion.WithResource("leases")
)

// harness drives a Controller whose informers are never started: the test puts objects
// into the fake API and the informer caches itself, and calls sweep directly, so every
// step happens at a fake-clock time the test chose.
type harness struct {
	t      *testing.T
	ctx    context.Context
	clock  *testingclock.FakeClock
	client *fake.Clientset
	ctrl   *Controller
	nodes  cache.Indexer
	leases cache.Indexer
	pods   cache.Indexer
	events *record.FakeRecorder
	reg    *prometheus.Registry
	logs   *bytes.Buffer
	// nodeClock is the node agent's clock: an hour behind the controller's, to show
	// that only changes of the node's timestamps matter.
	nodeClock time.Time
}

func newHarness(t *testing.T) *harness {
	return newHarnessWith(t, DefaultOptions())
}

func newHarnessWith(t *testing.T, opts Options) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	nodeInf := factory.Core().V1().Nodes()
	leaseInf := factory.Coordination().V1().Leases()
	podInf := factory.Core().V1().Pods()
	clk := testingclock.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	logs := &bytes.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	events := record.NewFakeRecorder(10000)
	ctrl, err := New(Config{
		Client: client, Nodes: nodeInf, Leases: leaseInf, Pods: podInf, Clock: clk,
		Registerer: reg, Logger: logger, Recorder: events, Options: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{
		t: t, ctx: t.Context(), clock: clk, client: client, ctrl: ctrl,
		nodes: nodeInf.Informer().GetIndexer(), leases: leaseInf.Informer().GetIndexer(),
		pods: podInf.Informer().GetIndexer(), events: events,
		reg: reg, logs: logs, nodeClock: t0.Add(-time.Hour),
	}
}

// step advances both clocks.
func (h *harness) step(d time.Duration) {
	h.clock.Step(d)
	h.nodeClock = h.nodeClock.Add(d)
}

// sweep runs one controller sweep, then lets the cache catch up with what it wrote, as
// the node informer would.
func (h *harness) sweep() {
	h.t.Helper()
	h.ctrl.sweep(h.ctx)
	h.resync()
}

// resync replaces the node and pod caches with what the fake API holds.
func (h *harness) resync() {
	h.t.Helper()
	pods, err := h.client.Tracker().List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	podItems := []any{}
	for i := range pods.(*v1.PodList).Items {
		podItems = append(podItems, &pods.(*v1.PodList).Items[i])
	}
	if err := h.pods.Replace(podItems, ""); err != nil {
		h.t.Fatal(err)
	}
	objs, err := h.client.Tracker().List(nodesResource, v1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	list := objs.(*v1.NodeList)
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if err := h.nodes.Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
}

// newNode makes a registered node; conds are the conditions it has posted.
func (h *harness) newNode(name string, conds ...v1.NodeConditionType) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(h.nodeClock.Add(-time.Minute))}}
	for _, t := range conds {
		status := v1.ConditionFalse
		if t == v1.NodeReady {
			status = v1.ConditionTrue
		}
		node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{
			Type: t, Status: status, Reason: "Posted", Message: "posted by plinthd",
			LastHeartbeatTime: metav1.NewTime(h.nodeClock), LastTransitionTime: metav1.NewTime(h.nodeClock),
		})
	}
	h.putNode(node)
	return node
}

// putNode writes node to the API (without recording an action, so only the
// controller's calls are counted) and to the cache.
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
}

func (h *harness) deleteNode(name string) {
	h.t.Helper()
	node := h.node(name)
	if err := h.client.Tracker().Delete(nodesResource, "", name); err != nil {
		h.t.Fatal(err)
	}
	if err := h.nodes.Delete(node); err != nil {
		h.t.Fatal(err)
	}
}

// postStatus is plinthd posting every condition it has as healthy with a new heartbeat.
func (h *harness) postStatus(name string) {
	h.t.Helper()
	node := h.node(name)
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		want := v1.ConditionFalse
		if c.Type == v1.NodeReady {
			want = v1.ConditionTrue
		}
		if c.Status != want {
			c.Status, c.Reason, c.Message = want, "Posted", "posted by plinthd"
			c.LastTransitionTime = metav1.NewTime(h.nodeClock)
		}
		c.LastHeartbeatTime = metav1.NewTime(h.nodeClock)
	}
	h.putNode(node)
}

// renewLease is plinthd renewing (or creating) its Lease at the node clock's time.
func (h *harness) renewLease(name string) {
	h.t.Helper()
	rt := metav1.NewMicroTime(h.nodeClock)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr(name), RenewTime: &rt},
	}
	err := h.client.Tracker().Create(leasesResource, lease, lease.Namespace)
	if apierrors.IsAlreadyExists(err) {
		err = h.client.Tracker().Update(leasesResource, lease, lease.Namespace)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.leases.Update(lease); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) node(name string) *v1.Node {
	h.t.Helper()
	obj, err := h.client.Tracker().Get(nodesResource, "", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return obj.(*v1.Node).DeepCopy()
}

func (h *harness) condition(name string, t v1.NodeConditionType) v1.NodeCondition {
	h.t.Helper()
	node := h.node(name)
	i := conditionIndex(node.Status.Conditions, t)
	if i < 0 {
		h.t.Fatalf("node %s has no %s condition: %+v", name, t, node.Status.Conditions)
	}
	return node.Status.Conditions[i]
}

// statusWrites counts the controller's UpdateStatus calls (including failed ones).
func (h *harness) statusWrites() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource() == nodesResource && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (h *harness) actions(verb string) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetResource() == nodesResource {
			n++
		}
	}
	return n
}

// onStatusUpdate installs a reactor for the controller's status writes; react returns
// handled=false to let the write through.
func (h *harness) onStatusUpdate(react func(n int, action k8stesting.UpdateAction) (bool, error)) {
	n := 0
	h.client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateAction)
		if ua.GetSubresource() != "status" {
			return false, nil, nil
		}
		n++
		handled, err := react(n, ua)
		return handled, nil, err
	})
}

func (h *harness) metric(name string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			h.t.Fatalf("metric %s has %d series, want 1", name, len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	h.t.Fatalf("metric %s not registered", name)
	return 0
}
