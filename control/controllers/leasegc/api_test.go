package leasegc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/leasegc"
)

// The API test runs a publisher and the collector against the real API server over a
// real embedded etcd, on one fake clock, with the collector's informer restricted to
// identity Leases in kube-system by a label selector, as the control service wires it.
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

func TestIdentityLeasesThroughTheAPI(t *testing.T) {
	client := apitest.Start(t, apitest.Options{}).Client
	ctx := t.Context()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)

	create := func(name string, renewed time.Time, identity bool) {
		t.Helper()
		rt := metav1.NewMicroTime(renewed)
		seconds := int32(3600)
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: &seconds}}
		if identity {
			l.Labels = map[string]string{leasegc.ComponentLabel: leasegc.Component}
		}
		if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("plinth-control-stale", t0.Add(-2*time.Hour-time.Second), true) // expired over an hour ago
	create("plinth-control-expiring", t0.Add(-90*time.Minute), true)       // goes at t0+30min
	create("some-old-lock", t0.Add(-48*time.Hour), false)                  // not an identity Lease

	publisher, err := leasegc.NewPublisher(leasegc.PublisherConfig{Client: client, Clock: clk, Hostname: "control-test-host", Identity: "control-test-host_1"})
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(leasegc.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = leasegc.LabelSelector }))
	collector, err := leasegc.NewCollector(leasegc.CollectorConfig{Client: client, Leases: factory.Coordination().V1().Leases(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { done <- publisher.Run(runCtx) }()
	go func() { done <- collector.Run(runCtx) }()

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
	own := publisher.Name()
	want := []string{"plinth-control-expiring", own, "some-old-lock"}
	slices.Sort(want)
	eventually(t, "the stale identity Lease to go and the replica's own to appear", func() bool { return slices.Equal(names(), want) })
	l, err := client.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: leasegc.LabelSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range l.Items {
		if lease.Name == own && (*lease.Spec.HolderIdentity != "control-test-host_1" || *lease.Spec.LeaseDurationSeconds != 3600) {
			t.Errorf("own identity Lease spec %+v", lease.Spec)
		}
	}

	// 30 minutes on, renewing all the while, the expiring one has been expired an hour.
	for range 180 {
		clk.Step(10 * time.Second)
	}
	eventually(t, "the expiring identity Lease to go at its deadline", func() bool {
		return !slices.Contains(names(), "plinth-control-expiring")
	})
	eventually(t, "the replica's own Lease to be renewed", func() bool {
		own, err := client.CoordinationV1().Leases("kube-system").Get(ctx, own, metav1.GetOptions{})
		return err == nil && own.Spec.RenewTime.After(t0.Add(20*time.Minute))
	})
	if got := names(); !slices.Contains(got, own) || !slices.Contains(got, "some-old-lock") {
		t.Errorf("leases %v: the replica's own and the unlabelled one must stay", got)
	}
}
