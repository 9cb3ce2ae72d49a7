package nodeipam

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
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

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// harness drives a Controller whose informer is never started: the test keeps the
// cache equal to the fake API's Nodes and calls sync as Run's worker would.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	ctrl   *Controller
	nodes  cache.Indexer
	events *record.FakeRecorder
	reg    *prometheus.Registry
}

func newHarness(t *testing.T, clusterCIDR string, v4, v6 int, existing ...*v1.Node) *harness {
	t.Helper()
	cidrs, err := ParseClusterCIDRs(clusterCIDR)
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, len(existing))
	for i, n := range existing {
		objs[i] = n
	}
	client := fake.NewClientset(objs...)
	inf := informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes()
	events := record.NewFakeRecorder(100)
	reg := prometheus.NewRegistry()
	ctrl, err := New(Config{Client: client, Nodes: inf, Clock: testingclock.NewFakeClock(t0), Recorder: events, Registerer: reg,
		Options: Options{ClusterCIDRs: cidrs, NodeMaskSizeIPv4: v4, NodeMaskSizeIPv6: v6}})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: client, ctrl: ctrl, nodes: inf.Informer().GetIndexer(), events: events, reg: reg}
	h.resync()
	if err := ctrl.rebuild(); err != nil {
		t.Fatal(err)
	}
	return h
}

// resync replaces the cache with the fake API's Nodes.
func (h *harness) resync() {
	h.t.Helper()
	list, err := h.client.CoreV1().Nodes().List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	objs := make([]any, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	if err := h.nodes.Replace(objs, ""); err != nil {
		h.t.Fatal(err)
	}
}

func node(name, uid string, podCIDRs ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(t0)}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDRs[0], podCIDRs
	}
	return n
}

func (h *harness) create(n *v1.Node) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Nodes().Create(h.t.Context(), n, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.resync()
	h.ctrl.queue.Add(n.Name) // as the informer's add event would
}

func (h *harness) delete(name string) {
	h.t.Helper()
	if err := h.client.CoreV1().Nodes().Delete(h.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.resync()
	h.ctrl.queue.Add(name) // as the informer's delete event would
}

// drain syncs every queued Node until the queue is empty, as Run's worker does.
func (h *harness) drain() {
	h.t.Helper()
	for h.ctrl.queue.Len() > 0 {
		name, _ := h.ctrl.queue.Get()
		if err := h.ctrl.sync(h.t.Context(), name); err != nil {
			h.t.Errorf("sync %s: %v", name, err)
		}
		h.ctrl.queue.Done(name)
		h.resync()
	}
}

func (h *harness) syncNode(name string) error {
	h.t.Helper()
	err := h.ctrl.sync(h.t.Context(), name)
	h.resync()
	return err
}

func (h *harness) get(name string) *v1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestNodesGetDistinctCIDRsInOrder(t *testing.T) {
	h := newHarness(t, "10.244.0.0/16,fd00:10:244::/56", 24, 64)
	for _, name := range []string{"a", "b", "c"} {
		h.create(node(name, "uid-"+name))
		if err := h.syncNode(name); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{
		"a": {"10.244.0.0/24", "fd00:10:244::/64"},
		"b": {"10.244.1.0/24", "fd00:10:244:1::/64"},
		"c": {"10.244.2.0/24", "fd00:10:244:2::/64"},
	}
	for name, cidrs := range want {
		n := h.get(name)
		if !slices.Equal(n.Spec.PodCIDRs, cidrs) || n.Spec.PodCIDR != cidrs[0] {
			t.Errorf("node %s: podCIDR %q podCIDRs %v, want %v", name, n.Spec.PodCIDR, n.Spec.PodCIDRs, cidrs)
		}
	}
	// A second sync writes nothing.
	h.client.ClearActions()
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("second sync wrote: %v", a)
		}
	}
	if got := metricValue(t, h.ctrl.metrics.allocations.WithLabelValues("10.244.0.0/16")); got != 3 {
		t.Errorf("allocations metric = %v, want 3", got)
	}
}

func TestRebuildKeepsExistingCIDRs(t *testing.T) {
	h := newHarness(t, "10.244.0.0/22", 24, 64,
		node("old-1", "u1", "10.244.0.0/24"), node("old-2", "u2", "10.244.2.0/24"),
		node("elsewhere", "u3", "192.168.7.0/24"))
	h.create(node("new-1", "n1"))
	h.create(node("new-2", "n2"))
	h.drain()
	got := []string{h.get("new-1").Spec.PodCIDR, h.get("new-2").Spec.PodCIDR}
	slices.Sort(got)
	if want := []string{"10.244.1.0/24", "10.244.3.0/24"}; !slices.Equal(got, want) {
		t.Errorf("new nodes got %v, want %v (the free ones)", got, want)
	}
	if n := h.get("elsewhere"); n.Spec.PodCIDR != "192.168.7.0/24" {
		t.Errorf("a node outside the cluster CIDR was changed: %v", n.Spec)
	}
}

func TestExhaustionMarksTheNodeAndReleaseRetriesIt(t *testing.T) {
	h := newHarness(t, "10.0.0.0/23", 24, 64)
	h.create(node("a", "ua"))
	h.create(node("b", "ub"))
	h.create(node("c", "uc"))
	for _, name := range []string{"a", "b", "c"} {
		if err := h.syncNode(name); err != nil {
			t.Fatal(err)
		}
	}
	c := h.get("c")
	if c.Spec.PodCIDR != "" {
		t.Fatalf("node c got %q from an exhausted range", c.Spec.PodCIDR)
	}
	cond := networkCondition(c)
	if cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != ReasonCIDRNotAvailable {
		t.Fatalf("NetworkUnavailable on c = %+v, want True/%s", cond, ReasonCIDRNotAvailable)
	}
	events := h.drainEvents()
	if len(events) != 1 || !strings.Contains(events[0], ReasonCIDRNotAvailable) || !strings.Contains(events[0], "10.0.0.0/23") {
		t.Errorf("events = %q, want one CIDRNotAvailable naming the range", events)
	}
	if got := metricValue(t, h.ctrl.metrics.usage.WithLabelValues("10.0.0.0/23")); got != 1 {
		t.Errorf("usage = %v, want 1", got)
	}

	freed := h.get("a").Spec.PodCIDR
	h.delete("a")
	h.drain() // a's deletion releases its CIDR and queues c
	c = h.get("c")
	if c.Spec.PodCIDR != freed {
		t.Errorf("after a's deletion c got %q, want the freed %s", c.Spec.PodCIDR, freed)
	}
	if cond := networkCondition(c); cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != ReasonCIDRAssigned {
		t.Errorf("NetworkUnavailable on c = %+v, want False/%s", cond, ReasonCIDRAssigned)
	}
	if got := metricValue(t, h.ctrl.metrics.releases.WithLabelValues("10.0.0.0/23")); got != 1 {
		t.Errorf("releases = %v, want 1", got)
	}
}

func TestForeignNetworkUnavailableIsLeftAlone(t *testing.T) {
	h := newHarness(t, "10.0.0.0/16", 24, 64)
	n := node("a", "ua")
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionTrue, Reason: "NoRouteCreated"}}
	h.create(n)
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	if cond := networkCondition(h.get("a")); cond.Status != v1.ConditionTrue || cond.Reason != "NoRouteCreated" {
		t.Errorf("a network plugin's condition was changed: %+v", cond)
	}
}

func TestReplacedNodeReleasesTheOldCIDR(t *testing.T) {
	h := newHarness(t, "10.0.0.0/24", 25, 64)
	h.create(node("a", "old"))
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	first := h.get("a").Spec.PodCIDR
	// Deleted and created again between two looks at the cache: only the UID differs.
	h.delete("a")
	h.create(node("a", "new"))
	h.create(node("b", "ub"))
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	if err := h.syncNode("b"); err != nil {
		t.Fatal(err)
	}
	a, b := h.get("a").Spec.PodCIDR, h.get("b").Spec.PodCIDR
	if a == "" || b == "" || a == b {
		t.Fatalf("a=%q b=%q: want two distinct CIDRs out of a range of two", a, b)
	}
	if a != first && b != first {
		t.Errorf("the old incarnation's %s was never handed out again (a=%s b=%s)", first, a, b)
	}
}

func TestFailedWriteRetriesTheSameCIDR(t *testing.T) {
	h := newHarness(t, "10.0.0.0/16", 24, 64)
	h.create(node("a", "ua"))
	fail := true
	var attempted []string
	h.client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		attempted = append(attempted, a.(k8stesting.UpdateAction).GetObject().(*v1.Node).Spec.PodCIDR)
		if fail {
			fail = false
			return true, nil, errors.New("etcd is away")
		}
		return false, nil, nil
	})
	if err := h.syncNode("a"); err == nil {
		t.Fatal("sync succeeded through a failed write")
	}
	h.create(node("b", "ub")) // must not get a's CIDR meanwhile
	if err := h.syncNode("b"); err != nil {
		t.Fatal(err)
	}
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	if len(attempted) != 3 || attempted[0] != attempted[2] {
		t.Fatalf("writes of a, b, a: %v; want a's retry to carry its first CIDR", attempted)
	}
	if a, b := h.get("a").Spec.PodCIDR, h.get("b").Spec.PodCIDR; a == b {
		t.Errorf("a and b share %s", a)
	}
}

func TestConflictingNodeCIDRIsReported(t *testing.T) {
	h := newHarness(t, "10.0.0.0/16", 24, 64, node("first", "u1", "10.0.5.0/24"))
	second := node("second", "u2", "10.0.5.0/24")
	second.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
	h.create(second)
	if err := h.syncNode("second"); err != nil {
		t.Fatal(err)
	}
	events := h.drainEvents()
	if len(events) != 1 || !strings.Contains(events[0], ReasonCIDRAssignmentFailed) || !strings.Contains(events[0], "first") {
		t.Errorf("events = %q, want a CIDRAssignmentFailed naming the holder", events)
	}
	h.delete("second") // releasing second must not free first's CIDR
	h.drain()
	h.create(node("third", "u3"))
	h.drain()
	if got := h.get("third").Spec.PodCIDR; got == "10.0.5.0/24" {
		t.Errorf("third got %s, which first still carries", got)
	}
}

func TestCIDRSetIndexRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
	}{{"10.244.0.0/16", 24}, {"fd00:10:244::/56", 64}, {"10.0.0.0/8", 24}, {"2001:db8::/48", 64}} {
		s := newCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask)
		for _, i := range []uint64{0, 1, s.count / 2, s.count - 1} {
			p := s.prefix(i)
			if !s.cluster.Contains(p.Addr()) || p.Bits() != tc.mask {
				t.Errorf("%s: prefix(%d) = %s, outside or wrong size", tc.cluster, i, p)
			}
			if j, ok := s.index(p); !ok || j != i {
				t.Errorf("%s: index(prefix(%d)=%s) = %d, %v", tc.cluster, i, p, j, ok)
			}
		}
		if _, ok := s.index(netip.MustParsePrefix("192.0.2.0/24")); ok {
			t.Errorf("%s: a foreign prefix has an index", tc.cluster)
		}
	}
}

func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestCIDRsSetByOthersReplaceAnUnwrittenAllocation(t *testing.T) {
	h := newHarness(t, "10.0.0.0/16", 24, 64)
	h.create(node("a", "ua"))
	h.client.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is away")
	})
	if err := h.syncNode("a"); err == nil {
		t.Fatal("sync succeeded through a failed write")
	}
	held := h.ctrl.held["a"].cidrs[0]
	// An administrator sets another CIDR directly (the fake's tracker, past the reactor).
	n := h.get("a")
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.0.200.0/24", []string{"10.0.200.0/24"}
	if err := h.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
		t.Fatal(err)
	}
	h.resync()
	if err := h.syncNode("a"); err != nil {
		t.Fatal(err)
	}
	if got := h.ctrl.held["a"].cidrs; len(got) != 1 || got[0].String() != "10.0.200.0/24" {
		t.Errorf("held for a: %v, want what it carries", got)
	}
	s := h.ctrl.sets[0]
	if i, _ := s.index(held); s.used[i].name != "" {
		t.Errorf("%s, allocated but never written, is still occupied by %v", held, s.used[i])
	}
}
