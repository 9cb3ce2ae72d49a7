package containergc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeRuntime holds containers, sandboxes and log directories in memory; a sandbox is
// active while it is marked ready or a container it holds (holds: container ID to
// sandbox ID) still exists.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []Container
	sandboxes  []Sandbox
	ready      map[string]bool
	holds      map[string]string
	logDirs    []PodLogDir
	removed    []string
	failRemove map[string]error
	failList   error
}

func (f *fakeRuntime) DeadContainers(context.Context) ([]Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failList != nil {
		return nil, f.failList
	}
	return slices.Clone(f.containers), nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, c Container) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failRemove[c.ID]; err != nil {
		return err
	}
	f.containers = slices.DeleteFunc(f.containers, func(x Container) bool { return x.ID == c.ID })
	f.removed = append(f.removed, "container "+c.ID)
	return nil
}

func (f *fakeRuntime) Sandboxes(context.Context) ([]Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.sandboxes)
	for i := range out {
		out[i].Active = f.ready[out[i].ID] || slices.ContainsFunc(f.containers, func(c Container) bool { return f.holds[c.ID] == out[i].ID })
	}
	return out, nil
}

func (f *fakeRuntime) RemoveSandbox(_ context.Context, s Sandbox) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes = slices.DeleteFunc(f.sandboxes, func(x Sandbox) bool { return x.ID == s.ID })
	f.removed = append(f.removed, "sandbox "+s.ID)
	return nil
}

func (f *fakeRuntime) PodLogDirs(context.Context) ([]PodLogDir, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.logDirs), nil
}

func (f *fakeRuntime) RemovePodLogDir(_ context.Context, d PodLogDir) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logDirs = slices.DeleteFunc(f.logDirs, func(x PodLogDir) bool { return x.Path == d.Path })
	f.removed = append(f.removed, "logs "+d.Path)
	return nil
}

func (f *fakeRuntime) takeRemoved() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := strings.Join(f.removed, ", ")
	f.removed = nil
	return out
}

func newTestCollector(t *testing.T, rt *fakeRuntime, pods PodStates, clk *clocktesting.FakeClock) (*Collector, chan outcome, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := NewCollector(rt, pods, Config{Policy: DefaultPolicy(), Clock: clk, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan outcome)
	c.done = done
	return c, done, reg
}

func waitOutcome(t *testing.T, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no collection within 10s")
	}
	return outcome{}
}

// waitForTimer waits until Run has armed its timer, so a clock step is seen.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run never armed its timer")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCollectorRunsEveryMinute(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := &fakeRuntime{
		containers: []Container{dc("a", "app", 2*time.Minute), dc("a", "app", time.Minute), dc("gone", "app", time.Minute)},
		sandboxes: []Sandbox{
			{ID: "sa1", PodUID: "a", Created: t0.Add(-3 * time.Minute)}, {ID: "sa2", PodUID: "a", Created: t0.Add(-time.Minute)},
			{ID: "sgone", PodUID: "gone", Created: t0.Add(-time.Minute)},
		},
		holds:   map[string]string{"a/app/2m0s": "sa1", "a/app/1m0s": "sa2", "gone/app/1m0s": "sgone"},
		logDirs: []PodLogDir{{"a", "/var/log/pods/ns_a_a"}, {"gone", "/var/log/pods/ns_gone_gone"}},
	}
	pods := fakePods{ready: true, states: map[types.UID]PodState{"gone": {Deleted: true}}}
	c, done, reg := newTestCollector(t, rt, pods, clk)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })

	waitForTimer(t, clk)
	clk.Step(59 * time.Second)
	select {
	case o := <-done:
		t.Fatalf("collected before the minute was up: %+v", o)
	default:
	}
	clk.Step(time.Second)
	o := waitOutcome(t, done)
	if o.err != nil || o.result != (Result{Containers: 2, Sandboxes: 2, LogDirs: 1}) {
		t.Fatalf("first run = %+v", o)
	}
	// The deleted pod's container first, then the older restart; then the sandboxes
	// those containers held: a's older one (not its newest) and the deleted pod's.
	if got, want := rt.takeRemoved(), "container gone/app/1m0s, container a/app/2m0s, sandbox sa1, sandbox sgone, logs /var/log/pods/ns_gone_gone"; got != want {
		t.Errorf("removed %q\nwant    %q", got, want)
	}
	if got := testutil.ToFloat64(c.metrics.containers.WithLabelValues(ReasonDeletedPod)); got != 1 {
		t.Errorf("deleted_pod counter = %v", got)
	}
	if got := testutil.ToFloat64(c.metrics.containers.WithLabelValues(ReasonMaxPerPodContainer)); got != 1 {
		t.Errorf("max_per_pod_container counter = %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "plinth_container_garbage_collection_duration_seconds"); err != nil || n != 1 {
		t.Errorf("duration histogram: %d series, %v", n, err)
	}

	// A minute later nothing is left to do: idempotent.
	waitForTimer(t, clk)
	clk.Step(time.Minute)
	if o := waitOutcome(t, done); o.err != nil || o.result != (Result{}) {
		t.Errorf("second run = %+v", o)
	}
}

func TestCollectorTriggerRemovesTerminatedPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := &fakeRuntime{containers: []Container{dc("done", "app", time.Minute), dc("live", "app", time.Minute)}}
	pods := fakePods{ready: true, states: map[types.UID]PodState{"done": {Terminated: true}}}
	c, done, _ := newTestCollector(t, rt, pods, clk)
	// Both before Run starts, so Run cannot take the first before the second comes.
	c.Trigger()
	c.Trigger() // merged with the first
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })

	if o := waitOutcome(t, done); o.err != nil || o.result.Containers != 1 {
		t.Fatalf("triggered run = %+v", o)
	}
	if got := rt.takeRemoved(); got != "container done/app/1m0s" {
		t.Errorf("removed %q", got)
	}
	select {
	case o := <-done:
		t.Fatalf("a second run without a trigger or a minute: %+v", o)
	default:
	}
	// The period starts again after a triggered run.
	waitForTimer(t, clk)
	clk.Step(time.Minute)
	if o := waitOutcome(t, done); o.err != nil || o.result != (Result{}) {
		t.Errorf("periodic run after the trigger = %+v", o)
	}
}

func TestCollectKeepsGoingAfterFailures(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	boom := errors.New("device busy")
	rt := &fakeRuntime{
		containers: []Container{dc("gone", "a", time.Minute), dc("gone", "b", time.Minute)},
		failRemove: map[string]error{"gone/a/1m0s": boom},
	}
	pods := fakePods{ready: true, states: map[types.UID]PodState{"gone": {Deleted: true}}}
	c, _, _ := newTestCollector(t, rt, pods, clk)
	res, err := c.Collect(context.Background(), Options{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "gone/a/1m0s") {
		t.Errorf("err = %v, want the removal failure naming the container", err)
	}
	if res.Containers != 1 || rt.takeRemoved() != "container gone/b/1m0s" {
		t.Errorf("res = %+v: the other container must still go", res)
	}
	if got := testutil.ToFloat64(c.metrics.failures.WithLabelValues("container")); got != 1 {
		t.Errorf("failure counter = %v", got)
	}

	rt.failList = errors.New("runc list failed")
	if _, err := c.Collect(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "listing dead containers") {
		t.Errorf("list failure: %v", err)
	}
}

func TestNewCollectorRejectsNegativeMinAge(t *testing.T) {
	_, err := NewCollector(&fakeRuntime{}, fakePods{}, Config{Policy: Policy{MinAge: -time.Second}})
	if err == nil || !strings.Contains(err.Error(), "-1s") {
		t.Errorf("err = %v", err)
	}
}
