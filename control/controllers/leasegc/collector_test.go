package leasegc

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

var leasesResource = coordinationv1.SchemeGroupVersion.WithResource("leases")

// collectorHarness drives a Collector whose informer is never started: the test puts
// Leases into the fake API and the cache and calls collect at fake-clock times.
type collectorHarness struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	client *fake.Clientset
	ctrl   *Collector
	cache  cache.Indexer
}

func newCollectorHarness(t *testing.T) *collectorHarness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Coordination().V1().Leases()
	clk := testingclock.NewFakeClock(t0)
	ctrl, err := NewCollector(CollectorConfig{Client: client, Leases: inf, Clock: clk, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return &collectorHarness{t: t, clock: clk, client: client, ctrl: ctrl, cache: inf.Informer().GetIndexer()}
}

func identity(name string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	rt := metav1.NewMicroTime(renewed)
	holder := name + "_id"
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{"k8s.io/component": "plinth-control"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &rt, LeaseDurationSeconds: &seconds},
	}
}

func (h *collectorHarness) put(l *coordinationv1.Lease) {
	h.t.Helper()
	if err := h.client.Tracker().Add(l); err != nil {
		h.t.Fatal(err)
	}
	if err := h.cache.Add(l); err != nil {
		h.t.Fatal(err)
	}
}

// collect runs one pass and drops what the API no longer has from the cache.
func (h *collectorHarness) collect() (time.Time, bool) {
	h.t.Helper()
	next, ok := h.ctrl.collect(h.t.Context())
	for _, obj := range h.cache.List() {
		l := obj.(*coordinationv1.Lease)
		if _, err := h.client.Tracker().Get(leasesResource, l.Namespace, l.Name); apierrors.IsNotFound(err) {
			if err := h.cache.Delete(l); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	return next, ok
}

func (h *collectorHarness) exists(namespace, name string) bool {
	_, err := h.client.Tracker().Get(leasesResource, namespace, name)
	return err == nil
}

func (h *collectorHarness) deletions() float64 {
	var m dto.Metric
	if err := h.ctrl.deletions.Write(&m); err != nil {
		h.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestExpiredIdentityDeletedAfterAnHourNotBefore: a Lease renewed at t0 for 3600 s
// expires at t0+1h and goes at t0+2h, not a millisecond before.
func TestExpiredIdentityDeletedAfterAnHourNotBefore(t *testing.T) {
	h := newCollectorHarness(t)
	h.put(identity("plinth-control-gone", t0, 3600))
	h.put(identity("plinth-control-live", t0.Add(time.Hour), 3600))

	next, ok := h.collect()
	if !ok || !next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("next deadline %v, %v; want t0+2h", next, ok)
	}
	h.clock.SetTime(t0.Add(time.Hour + time.Minute)) // expired, but not for an hour
	h.collect()
	h.clock.SetTime(t0.Add(2*time.Hour - time.Millisecond))
	h.collect()
	if !h.exists("kube-system", "plinth-control-gone") {
		t.Fatal("deleted before it had been expired for an hour")
	}
	if got := len(h.client.Actions()); got != 0 {
		t.Fatalf("%d API calls before any deadline, want none", got)
	}
	h.clock.SetTime(t0.Add(2 * time.Hour))
	next, ok = h.collect()
	if h.exists("kube-system", "plinth-control-gone") {
		t.Fatal("kept an hour after it expired")
	}
	if !h.exists("kube-system", "plinth-control-live") {
		t.Fatal("a Lease renewed an hour later went too")
	}
	if !ok || !next.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("next deadline %v, %v; want the live Lease's, t0+3h", next, ok)
	}
	d := h.client.Actions()[0].(k8stesting.DeleteAction).GetDeleteOptions()
	if p := d.Preconditions; p == nil || p.UID == nil || *p.UID != "uid-plinth-control-gone" || p.ResourceVersion == nil || *p.ResourceVersion != "1" {
		t.Errorf("delete preconditions %+v, want the Lease's UID and resourceVersion", p)
	}
	if got := h.deletions(); got != 1 {
		t.Errorf("deletions metric %v, want 1", got)
	}
}

// TestOnlyIdentityLeasesOfKubeSystem: Leases without the label, with another
// component, or outside kube-system are never deleted, however old.
func TestOnlyIdentityLeasesOfKubeSystem(t *testing.T) {
	h := newCollectorHarness(t)
	unlabelled := identity("node-ish", t0.Add(-48*time.Hour), 40)
	unlabelled.Labels = nil
	other := identity("kube-apiserver-x", t0.Add(-48*time.Hour), 3600)
	other.Labels["k8s.io/component"] = "kube-apiserver"
	elsewhere := identity("plinth-control-elsewhere", t0.Add(-48*time.Hour), 3600)
	elsewhere.Namespace = "default"
	for _, l := range []*coordinationv1.Lease{unlabelled, other, elsewhere} {
		h.put(l)
	}
	if _, ok := h.collect(); ok {
		t.Error("a deadline was set for Leases that are not identity Leases")
	}
	if got := len(h.client.Actions()); got != 0 {
		t.Errorf("%d API calls, want none", got)
	}
}

// TestRenewedSinceSeenIsKept: the API's copy was renewed after the cache's; the
// resourceVersion precondition fails and the Lease stays, without a retry (the
// informer brings the renewal).
func TestRenewedSinceSeenIsKept(t *testing.T) {
	h := newCollectorHarness(t)
	stale := identity("plinth-control-back", t0.Add(-3*time.Hour), 3600)
	if err := h.cache.Add(stale); err != nil {
		t.Fatal(err)
	}
	fresh := identity("plinth-control-back", t0, 3600)
	fresh.ResourceVersion = "2"
	if err := h.client.Tracker().Add(fresh); err != nil {
		t.Fatal(err)
	}
	// The fake API does not check preconditions; this does, against its own copy.
	h.client.PrependReactor("delete", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		obj, err := h.client.Tracker().Get(leasesResource, d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		if p := d.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != obj.(*coordinationv1.Lease).ResourceVersion {
			return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), d.GetName(), errors.New("resourceVersion precondition"))
		}
		return false, nil, nil
	})
	if _, ok := h.collect(); ok {
		t.Error("a retry was scheduled for a Lease that was only renewed")
	}
	if !h.exists("kube-system", "plinth-control-back") || h.deletions() != 0 {
		t.Fatal("a Lease renewed since the cache saw it was deleted")
	}
}

// TestFailedDeleteRetries: an API error schedules another try 30 s later.
func TestFailedDeleteRetries(t *testing.T) {
	h := newCollectorHarness(t)
	h.put(identity("plinth-control-gone", t0.Add(-3*time.Hour), 3600))
	fail := true
	h.client.PrependReactor("delete", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("etcd leader changed")
		}
		return false, nil, nil
	})
	next, ok := h.collect()
	if !ok || !next.Equal(t0.Add(30*time.Second)) || !h.exists("kube-system", "plinth-control-gone") {
		t.Fatalf("next %v, %v, exists %v; want a retry at t0+30s", next, ok, h.exists("kube-system", "plinth-control-gone"))
	}
	fail = false
	h.clock.SetTime(next)
	h.collect()
	if h.exists("kube-system", "plinth-control-gone") {
		t.Fatal("the retry did not delete it")
	}
}

// TestLeaseWithoutRenewTimeCountsFromCreation: a Lease with neither renewTime nor a
// duration goes an hour after it was created.
func TestLeaseWithoutRenewTimeCountsFromCreation(t *testing.T) {
	h := newCollectorHarness(t)
	l := identity("plinth-control-blank", t0, 0)
	l.Spec = coordinationv1.LeaseSpec{}
	l.CreationTimestamp = metav1.NewTime(t0)
	h.put(l)
	if next, ok := h.collect(); !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next %v, %v; want creation + 1h", next, ok)
	}
}

// TestCollectorRunWakesAtTheDeadline runs the collector on a started informer: a Lease
// long gone is deleted at once; another is deleted when the timer for its deadline
// fires on the fake clock, and not before.
func TestCollectorRunWakesAtTheDeadline(t *testing.T) {
	client := fake.NewClientset(identity("plinth-control-old", t0.Add(-3*time.Hour), 3600),
		identity("plinth-control-soon", t0.Add(-time.Hour), 3600))
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	ctrl, err := NewCollector(CollectorConfig{Client: client, Leases: factory.Coordination().V1().Leases(), Clock: clk})
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
	names := func() []string {
		list, err := client.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range list.Items {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}
	eventually(t, "the long-gone Lease to be deleted", func() bool { return slices.Equal(names(), []string{"plinth-control-soon"}) })
	eventually(t, "the timer for t0+1h", clk.HasWaiters)
	clk.Step(time.Hour - time.Second)
	time.Sleep(50 * time.Millisecond) // an early deletion would show by now
	if got := names(); !slices.Equal(got, []string{"plinth-control-soon"}) {
		t.Fatalf("leases %v an hour minus a second before its deadline", got)
	}
	eventually(t, "the timer to be re-armed", clk.HasWaiters)
	clk.Step(time.Second)
	eventually(t, "the Lease to go at its deadline", func() bool { return len(names()) == 0 })
}
