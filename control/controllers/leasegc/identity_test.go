package leasegc

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestIdentityLeaseName: the name must never change for a hostname (a replica restarted
// on its host renews the Lease it had, and replicas of different versions agree), so
// one value is pinned; it must differ between hosts and be a valid object name.
func TestIdentityLeaseName(t *testing.T) {
	// sha256("control-1") starts bd fa 53; its first 10 bytes in lowercase base32
	// (python3: base64.b32encode(hashlib.sha256(b"control-1").digest()[:10]).lower()).
	if got, want := IdentityLeaseName("control-1"), "plinth-control-xx5fgzjvawk5tjne"; got != want {
		t.Errorf("IdentityLeaseName(control-1) = %q, want %q", got, want)
	}
	a, b := IdentityLeaseName("control-1"), IdentityLeaseName("control-2")
	if a == b {
		t.Errorf("two hosts share the name %q", a)
	}
	for _, host := range []string{"control-1", "a.very.long.fully.qualified.host.name.example.com", "UPPER_case"} {
		name := IdentityLeaseName(host)
		if len(name) != len("plinth-control-")+16 || !strings.HasPrefix(name, "plinth-control-") {
			t.Errorf("%q: name %q, want plinth-control- and 16 characters", host, name)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) != 0 {
			t.Errorf("%q: name %q is not a valid object name: %v", host, name, errs)
		}
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPublisherCreatesAndRenewsEvery10s runs the publisher on the fake clock: the Lease
// appears at once, is renewed at each 10 s tick, and nothing renews it once Run has
// returned.
func TestPublisherCreatesAndRenewsEvery10s(t *testing.T) {
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(t0)
	p, err := NewPublisher(PublisherConfig{Client: client, Clock: clk, Hostname: "control-1", Identity: "control-1_abc"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	get := func() *coordinationv1.Lease {
		l, err := client.CoordinationV1().Leases("kube-system").Get(t.Context(), p.Name(), metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return l
	}
	renewedAt := func(at time.Time) func() bool {
		return func() bool { l := get(); return l != nil && l.Spec.RenewTime.Time.Equal(at) }
	}
	eventually(t, "the identity Lease", renewedAt(t0))
	l := get()
	if l.Labels["k8s.io/component"] != "plinth-control" || l.Labels[v1.LabelHostname] != "control-1" {
		t.Errorf("labels %v, want k8s.io/component=plinth-control and the hostname", l.Labels)
	}
	if *l.Spec.HolderIdentity != "control-1_abc" || *l.Spec.LeaseDurationSeconds != 3600 || !l.Spec.AcquireTime.Time.Equal(t0) {
		t.Errorf("spec holder %q, duration %d, acquired %v; want control-1_abc, 3600, t0", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime)
	}
	eventually(t, "the renewal ticker", clk.HasWaiters)
	clk.Step(9 * time.Second)
	time.Sleep(50 * time.Millisecond) // an early renewal would show by now
	if !renewedAt(t0)() {
		t.Fatalf("renewed before 10 s: %v", get().Spec.RenewTime)
	}
	clk.Step(time.Second)
	eventually(t, "the renewal at 10 s", renewedAt(t0.Add(10*time.Second)))
	clk.Step(10 * time.Second)
	eventually(t, "the renewal at 20 s", renewedAt(t0.Add(20*time.Second)))
	if !get().Spec.AcquireTime.Time.Equal(t0) {
		t.Error("renewal moved acquireTime")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	writes := len(client.Actions())
	clk.Step(30 * time.Second)
	time.Sleep(50 * time.Millisecond) // a renewal left running would show by now
	if got := len(client.Actions()); got != writes || !renewedAt(t0.Add(20*time.Second))() {
		t.Errorf("%d API calls after the stop (want %d), lease %v", got, writes, get().Spec.RenewTime)
	}
}

// TestPublisherTakesOverItsHostsLease: the Lease of this host's previous replica gets the
// new holder, a new acquireTime, a transition and the labels back.
func TestPublisherTakesOverItsHostsLease(t *testing.T) {
	old := metav1.NewMicroTime(t0.Add(-time.Hour))
	holder, transitions := "control-1_old", int32(2)
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: IdentityLeaseName("control-1"), Namespace: "kube-system"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &old, RenewTime: &old, LeaseTransitions: &transitions},
	})
	clk := testingclock.NewFakeClock(t0)
	p, err := NewPublisher(PublisherConfig{Client: client, Clock: clk, Hostname: "control-1", Identity: "control-1_new"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("kube-system").Get(t.Context(), p.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "control-1_new" || !l.Spec.AcquireTime.Time.Equal(t0) || !l.Spec.RenewTime.Time.Equal(t0) || *l.Spec.LeaseTransitions != 3 {
		t.Errorf("spec %+v, want the new holder acquired and renewed now, transitions 3", l.Spec)
	}
	if l.Labels["k8s.io/component"] != "plinth-control" {
		t.Errorf("labels %v, want the component label restored", l.Labels)
	}
}

func TestNewPublisherRejectsBadConfig(t *testing.T) {
	client := fake.NewClientset()
	clk := testingclock.NewFakeClock(t0)
	if _, err := NewPublisher(PublisherConfig{Client: client, Clock: clk, Identity: "x"}); err == nil {
		t.Error("no error without a hostname")
	}
	_, err := NewPublisher(PublisherConfig{Client: client, Clock: clk, Hostname: "h", Identity: "x", LeaseDuration: 5 * time.Second, RenewInterval: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "5s") {
		t.Errorf("renew interval longer than the duration: %v, want an error naming both", err)
	}
}
