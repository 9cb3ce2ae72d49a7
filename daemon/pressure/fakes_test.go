package pressure

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeSource returns the observations set last and counts the calls.
type fakeSource struct {
	mu    sync.Mutex
	obs   Observations
	err   error
	calls int
	// gate, when set, holds every Observe until a value is sent on it.
	gate chan struct{}
}

func (f *fakeSource) set(obs Observations, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs, f.err = obs, err
}

func (f *fakeSource) Observe(ctx context.Context) (Observations, error) {
	f.mu.Lock()
	f.calls++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.obs, f.err
}

func (f *fakeSource) setGate(g chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = g
}

func (f *fakeSource) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fakePods is the pods on the node; an evicted pod leaves the list when it is marked
// gone.
type fakePods struct {
	mu   sync.Mutex
	pods []Pod
	gone map[string]bool
	// evicted records every Evict call in order, with the message.
	evicted  []string
	messages []string
	graces   []time.Duration
	evictErr error
}

func newFakePods(pods ...Pod) *fakePods { return &fakePods{pods: pods, gone: map[string]bool{}} }

func (f *fakePods) List(ctx context.Context) ([]Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Pod
	for _, p := range f.pods {
		if !f.gone[p.String()] {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakePods) Evict(ctx context.Context, pod Pod, message string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.evictErr != nil {
		return f.evictErr
	}
	f.evicted = append(f.evicted, pod.Name)
	f.messages = append(f.messages, message)
	f.graces = append(f.graces, grace)
	return nil
}

func (f *fakePods) Gone(pod Pod) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone[pod.String()]
}

func (f *fakePods) markGone(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.Name == name {
			f.gone[p.String()] = true
		}
	}
}

func (f *fakePods) evictions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.evicted)
}

// fakeReclaimer records the signals it was asked to reclaim for and runs onReclaim.
type fakeReclaimer struct {
	mu        sync.Mutex
	signals   []Signal
	onReclaim func()
}

func (f *fakeReclaimer) Reclaim(ctx context.Context, s Signal) (int64, error) {
	f.mu.Lock()
	f.signals = append(f.signals, s)
	cb := f.onReclaim
	f.mu.Unlock()
	if cb != nil {
		cb()
	}
	return 1 << 30, nil
}

func (f *fakeReclaimer) calls() []Signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.signals)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond until it holds. It synchronises with goroutines under test; the
// deadline is only there so a broken test fails instead of hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var errFake = errors.New("fake failure")

// metricValue gathers reg and returns the value of the series of family name whose
// labels include labels (pairs of name, value); ok is false when there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// seriesCount is the number of series of family name in reg.
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
