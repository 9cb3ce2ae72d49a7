package controlclient

import (
	"context"
	"crypto/ecdsa"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitFor polls cond in real time: the renewer works in its own goroutine once the fake
// clock released it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRenewerRunsOnSchedule(t *testing.T) {
	// The control service signs on the renewer's clock: certificates stamped with the
	// real time while the renewer's clock is 45 minutes ahead would be due at once.
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFakeControlWithClock(t, true, clk)
	o := joinOpts(t, f)
	res, err := Join(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	first := certOf(t, res.CertFile)

	reg := prometheus.NewPedanticRegistry()
	r, err := NewCertRenewer(o.Kubeconfig, RenewerOptions{Clock: clk, Registerer: reg, Jitter: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	if r.CertFile() != res.CertFile {
		t.Fatalf("renewer replaces %s, join wrote %s", r.CertFile(), res.CertFile)
	}
	want := renewalDeadline(first, 0.5)
	if !r.NextRenewal().Equal(want) {
		t.Fatalf("next renewal %s, want %s (80%% of the lifetime)", r.NextRenewal(), want)
	}
	if ttl := metricValue(t, reg, "plinth_certificate_manager_client_ttl_seconds"); ttl < 3500 || ttl > 3600 {
		t.Fatalf("ttl metric %v, want about an hour", ttl)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// Nothing happens before the deadline.
	waitFor(t, "the renewer to wait", clk.HasWaiters)
	clk.SetTime(want.Add(-time.Second))
	waitFor(t, "the renewer to wait again", clk.HasWaiters)
	if f.renewedBy.Load() != nil {
		t.Fatal("renewed before the deadline")
	}
	if !certOf(t, res.CertFile).Equal(first) {
		t.Fatal("certificate replaced before the deadline")
	}

	clk.SetTime(want)
	waitFor(t, "the certificate to be replaced", func() bool { return !certOf(t, res.CertFile).Equal(first) })
	second := certOf(t, res.CertFile)
	if got := f.renewedBy.Load(); got != "system:node:node-a" {
		t.Fatalf("renewal authenticated as %v, want the node's certificate", got)
	}
	if second.PublicKey.(*ecdsa.PublicKey).Equal(first.PublicKey) {
		t.Fatal("renewal kept the old key")
	}
	if st, err := os.Stat(res.CertFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("renewed file mode %v (%v)", st.Mode(), err)
	}
	waitFor(t, "the next renewal to be scheduled", func() bool { return r.NextRenewal().Equal(renewalDeadline(second, 0.5)) })

	// A failed renewal is counted and retried after the backoff.
	f.fail.Store(true)
	waitFor(t, "the renewer to wait", clk.HasWaiters)
	clk.SetTime(r.NextRenewal())
	waitFor(t, "a renewal error", func() bool {
		return metricValue(t, reg, "plinth_certificate_manager_client_expiration_renew_errors") == 1
	})
	if !certOf(t, res.CertFile).Equal(second) {
		t.Fatal("a failed renewal replaced the certificate")
	}
	f.fail.Store(false)
	waitFor(t, "the renewer to back off", clk.HasWaiters)
	clk.Step(retryInitial)
	waitFor(t, "the retried renewal", func() bool { return !certOf(t, res.CertFile).Equal(second) })
}

// metricValue gathers reg and returns the value of the single sample of metric name.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.Metric) != 1 {
			continue
		}
		if c := mf.Metric[0].Counter; c != nil {
			return c.GetValue()
		}
		return mf.Metric[0].GetGauge().GetValue()
	}
	t.Fatalf("metric %s not gathered", name)
	return 0
}
