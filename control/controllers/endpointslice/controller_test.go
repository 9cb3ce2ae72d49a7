package endpointslice

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

var slicesResource = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")

// harness runs a Controller's informers over a fake API but calls sync itself, so each
// test decides when a sync happens and sees exactly what it wrote.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	ctrl   *Controller
	events *record.FakeRecorder
	reg    *prometheus.Registry
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	// The fake API neither names created objects nor counts generations; the real
	// one does both, and the controller relies on them.
	var n atomic.Int64
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		if s.Name == "" {
			s.Name = fmt.Sprintf("%s%05d", s.GenerateName, n.Add(1))
		}
		s.UID, s.Generation = types.UID("uid-"+s.Name), 1
		return false, nil, nil
	})
	client.PrependReactor("update", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*discoveryv1.EndpointSlice)
		old, err := client.Tracker().Get(slicesResource, s.Namespace, s.Name)
		if err == nil {
			s.Generation = old.(*discoveryv1.EndpointSlice).Generation + 1
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	events := record.NewFakeRecorder(100)
	reg := prometheus.NewRegistry()
	ctrl, err := New(Config{Client: client, Services: factory.Core().V1().Services(), Pods: factory.Core().V1().Pods(),
		Nodes: factory.Core().V1().Nodes(), Slices: factory.Discovery().V1().EndpointSlices(),
		Clock: testingclock.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), Registerer: reg,
		Recorder: events, Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.synced...) {
		t.Fatal("caches did not sync")
	}
	return &harness{t: t, client: client, ctrl: ctrl, events: events, reg: reg}
}

// sync runs one sync of default/web and waits until the slice cache shows the API's
// slices, so the next sync sees this one's writes.
func (h *harness) sync() error {
	h.t.Helper()
	err := h.ctrl.sync(h.t.Context(), types.NamespacedName{Namespace: "default", Name: "web"})
	h.waitForCache()
	return err
}

func (h *harness) waitForCache() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := h.apiSlices()
		cached, _ := h.ctrl.slices.List(labels.Everything())
		same := len(live) == len(cached)
		byName := map[string]int64{}
		for _, s := range cached {
			byName[s.Name] = s.Generation
		}
		for _, s := range live {
			same = same && byName[s.Name] == s.Generation
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the slice cache did not catch up with the API")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) apiSlices() []discoveryv1.EndpointSlice {
	h.t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices("").List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// writes counts create, update and delete actions on endpointslices so far.
func (h *harness) writes() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource == "endpointslices" && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete") {
			n++
		}
	}
	return n
}

// waitFor polls a cache condition; informers deliver on their own goroutines.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func node(name, zone string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if zone != "" {
		n.Labels = map[string]string{v1.LabelTopologyZone: zone}
	}
	return n
}

func TestSyncWritesOnlyWhatChanged(t *testing.T) {
	a, b := pod("a", "10.0.0.1"), pod("b", "10.0.0.2")
	h := newHarness(t, webService(), a, b, node("n1", "zone-a"))
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if h.writes() != 1 || len(h.apiSlices()) != 1 || len(h.apiSlices()[0].Endpoints) != 2 {
		t.Fatalf("first sync: %d writes, slices %+v", h.writes(), h.apiSlices())
	}
	for range 3 {
		if err := h.sync(); err != nil {
			t.Fatal(err)
		}
	}
	if h.writes() != 1 {
		t.Fatalf("syncs of an unchanged Service wrote %d times more", h.writes()-1)
	}
	// b stops being Ready: one update, with b not ready.
	b.Status.Conditions[0].Status = v1.ConditionFalse
	b.ResourceVersion = "2"
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the pod cache", func() bool {
		p, err := h.ctrl.pods.Pods("default").Get("b")
		return err == nil && !podReady(p)
	})
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if h.writes() != 2 {
		t.Fatalf("%d writes after one pod changed, want 2 in all", h.writes())
	}
	for _, ep := range h.apiSlices()[0].Endpoints {
		if ep.TargetRef.Name == "b" && *ep.Conditions.Ready {
			t.Fatal("b still ready")
		}
	}
	if got := value(t, h.ctrl.metrics.desired); got != 2 {
		t.Fatalf("endpoints_desired %v, want 2", got)
	}
	if got := value(t, h.ctrl.metrics.changes.WithLabelValues("update")); got != 1 {
		t.Fatalf("changes{operation=update} %v, want 1", got)
	}
}

func TestSyncRemovesManagedSlicesOnlyWhenServiceStopsSelecting(t *testing.T) {
	user := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4}
	h := newHarness(t, webService(), pod("a", "10.0.0.1"), node("n1", ""), user)
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if len(h.apiSlices()) != 2 {
		t.Fatalf("slices %+v, want the user's and one managed", h.apiSlices())
	}
	svc := webService()
	svc.Spec.Selector = nil
	if _, err := h.client.CoreV1().Services("default").Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the service cache", func() bool {
		s, err := h.ctrl.services.Services("default").Get("web")
		return err == nil && s.Spec.Selector == nil
	})
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if got := h.apiSlices(); len(got) != 1 || got[0].Name != "manual" {
		t.Fatalf("slices %+v, want only the user's", got)
	}
	// Without a selector the user's slices are theirs: more syncs write nothing.
	before := h.writes()
	if err := h.sync(); err != nil || h.writes() != before {
		t.Fatalf("sync of a selectorless Service: err %v, %d writes", err, h.writes()-before)
	}
}

func TestSyncDeletesSlicesOfDeletedService(t *testing.T) {
	h := newHarness(t, webService(), pod("a", "10.0.0.1"), node("n1", ""))
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if err := h.client.CoreV1().Services("default").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the service cache", func() bool {
		_, err := h.ctrl.services.Services("default").Get("web")
		return err != nil
	})
	if err := h.sync(); err != nil {
		t.Fatal(err)
	}
	if got := h.apiSlices(); len(got) != 0 {
		t.Fatalf("slices left: %+v", got)
	}
	if got := value(t, h.ctrl.metrics.numSlices); got != 0 {
		t.Fatalf("num_endpoint_slices %v after the Service went", got)
	}
}

func TestSyncRetriesPodsOnUnknownNodes(t *testing.T) {
	ghost := pod("g", "10.0.0.9")
	ghost.Spec.NodeName = "ghost"
	h := newHarness(t, webService(), pod("a", "10.0.0.1"), ghost, node("n1", ""))
	err := h.sync()
	if !errors.Is(err, errUnknownNodes) {
		t.Fatalf("sync: %v, want errUnknownNodes", err)
	}
	if got := h.apiSlices(); len(got) != 1 || len(got[0].Endpoints) != 1 {
		t.Fatalf("the known pod is not published while the other waits: %+v", got)
	}
}

func TestFailedWriteRecordsEvent(t *testing.T) {
	h := newHarness(t, webService(), pod("a", "10.0.0.1"), node("n1", ""))
	h.client.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is on fire")
	})
	if err := h.ctrl.sync(t.Context(), types.NamespacedName{Namespace: "default", Name: "web"}); err == nil {
		t.Fatal("sync succeeded with a failing API")
	}
	select {
	case e := <-h.events.Events:
		if !strings.HasPrefix(e, "Warning FailedToUpdateEndpointSlices") || !strings.Contains(e, "etcd is on fire") {
			t.Fatalf("event %q", e)
		}
	default:
		t.Fatal("no event")
	}
}

func TestStaleCacheWaitsForOwnWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	slice := func(uid string, gen int64) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Generation: gen}}
	}
	// Written: a updated to generation 2, b created, c deleted.
	written := func() *writeTracker {
		tr := newWriteTracker()
		tr.record(key, "a", 2)
		tr.record(key, "b", 1)
		tr.record(key, "c", deleted)
		return tr
	}
	for _, tc := range []struct {
		name   string
		cached []*discoveryv1.EndpointSlice
		stale  bool
	}{
		{"nothing seen", []*discoveryv1.EndpointSlice{slice("a", 1), slice("c", 1)}, true},
		{"update not seen", []*discoveryv1.EndpointSlice{slice("a", 1), slice("b", 1)}, true},
		{"create not seen", []*discoveryv1.EndpointSlice{slice("a", 2)}, true},
		{"deleted slice still cached", []*discoveryv1.EndpointSlice{slice("a", 2), slice("b", 1), slice("c", 1)}, true},
		{"caught up", []*discoveryv1.EndpointSlice{slice("a", 2), slice("b", 1)}, false},
		{"someone wrote after us", []*discoveryv1.EndpointSlice{slice("a", 5), slice("b", 3)}, false},
	} {
		if got := written().stale(key, tc.cached); got != tc.stale {
			t.Errorf("%s: stale %v, want %v", tc.name, got, tc.stale)
		}
	}

	tr := written()
	if !tr.stale(key, []*discoveryv1.EndpointSlice{slice("a", 1), slice("b", 1)}) {
		t.Fatal("not stale before a is seen")
	}
	// What was seen is forgotten: b may be deleted by someone else now.
	if tr.stale(key, []*discoveryv1.EndpointSlice{slice("a", 2)}) {
		t.Fatal("stale once a was seen at generation 2")
	}
	tr.record(key, "d", 1)
	tr.sliceGone(key, "d")
	if tr.stale(key, nil) {
		t.Fatal("a slice someone else deleted keeps the Service stale")
	}
}

// value reads a counter's or gauge's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
