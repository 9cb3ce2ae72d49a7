package pressure

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type managerHarness struct {
	t       *testing.T
	m       *Manager
	src     *fakeSource
	clk     *clocktesting.FakeClock
	reg     *prometheus.Registry
	wakeups chan Trigger
	cancel  context.CancelFunc
	done    chan error
}

// startManager runs a manager with the default thresholds, a 5 min transition period
// and a 1 s floor on a fake clock, and waits for its first evaluation.
func startManager(t *testing.T, initial Observations, deps Deps) *managerHarness {
	t.Helper()
	h := &managerHarness{
		t:       t,
		src:     &fakeSource{obs: initial},
		clk:     clocktesting.NewFakeClock(t0),
		reg:     prometheus.NewRegistry(),
		wakeups: make(chan Trigger, 16),
		done:    make(chan error, 1),
	}
	deps.Source, deps.Wakeups, deps.Clock, deps.Registerer, deps.Logger = h.src, h.wakeups, h.clk, h.reg, discardLogger()
	m, err := NewManager(DefaultConfig(), deps)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(h.stop)
	h.waitIdle(t, 1)
	return h
}

func (h *managerHarness) stop() {
	h.cancel()
	<-h.done
	h.done <- nil // for a second stop
}

// waitIdle waits until n evaluations have been published and Run waits on its timer.
func (h *managerHarness) waitIdle(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "evaluation to be published", func() bool {
		return h.src.count() >= n && h.evaluations() >= float64(n) && h.clk.Waiters() >= 1
	})
	if got := h.src.count(); got != n {
		t.Fatalf("%d evaluations, want %d", got, n)
	}
}

func (h *managerHarness) evaluations() float64 {
	var total float64
	for _, tr := range []Trigger{TriggerStart, TriggerPeriodic, TriggerPSI, TriggerOOMKill, TriggerReclaimStall, TriggerForkBurst, TriggerEvictionStep} {
		v, _ := metricValue(h.t, h.reg, "plinth_eviction_evaluations_total", "trigger", string(tr))
		total += v
	}
	return total
}

func (h *managerHarness) metric(name string, labels ...string) float64 {
	v, _ := metricValue(h.t, h.reg, name, labels...)
	return v
}

func (h *managerHarness) status(typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range h.m.Conditions() {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func drainChanged(m *Manager) bool {
	select {
	case <-m.Changed():
		return true
	default:
		return false
	}
}

func TestManagerStartsWithAnEvaluation(t *testing.T) {
	src := &fakeSource{}
	m, err := NewManager(DefaultConfig(), Deps{Source: src, Logger: discardLogger(), Clock: clocktesting.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Conditions() {
		if c.Status != corev1.ConditionFalse || !strings.HasSuffix(c.Message, "(not evaluated yet)") {
			t.Errorf("before Run: %+v, want False, not evaluated yet", c)
		}
	}
	if m.Snapshot().Evaluated {
		t.Error("Snapshot says evaluated before Run")
	}
	h := startManager(t, memoryObs(2*gi), Deps{})
	if !drainChanged(h.m) {
		t.Error("no Changed notification for the first evaluation")
	}
	s := h.m.Snapshot()
	if !s.Evaluated || s.Trigger != TriggerStart || s.Signals[SignalMemoryAvailable].Available != 2*gi || len(s.Thresholds) != 6 {
		t.Errorf("snapshot after start: %+v", s)
	}
}

// TestWakeupEvaluatesAtOnce: an event re-evaluates without the clock moving, and the
// node agent is told through Changed.
func TestWakeupEvaluatesAtOnce(t *testing.T) {
	h := startManager(t, memoryObs(2*gi), Deps{})
	drainChanged(h.m)
	h.src.set(memoryObs(50*mi), nil)
	h.wakeups <- TriggerPSI
	select {
	case <-h.m.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no Changed notification after a wakeup that crossed a threshold")
	}
	if got := h.status(corev1.NodeMemoryPressure); got != corev1.ConditionTrue {
		t.Fatalf("MemoryPressure %s after the wakeup, want True", got)
	}
	if !h.m.Snapshot().At.Equal(t0) {
		t.Errorf("evaluated at %s, want %s: the clock should not have moved", h.m.Snapshot().At, t0)
	}
	if n := h.metric("plinth_eviction_evaluations_total", "trigger", "psi"); n != 1 {
		t.Errorf("psi evaluations = %v, want 1", n)
	}
	if n := h.metric("plinth_eviction_evaluations_total", "trigger", "periodic"); n != 0 {
		t.Errorf("periodic evaluations = %v, want 0", n)
	}
}

// TestPeriodicFloor: without wakeups the manager evaluates once per interval, and a
// wakeup restarts the interval.
func TestPeriodicFloor(t *testing.T) {
	h := startManager(t, memoryObs(2*gi), Deps{})
	h.clk.Step(999 * time.Millisecond)
	h.clk.Step(time.Millisecond)
	h.waitIdle(t, 2)
	if s := h.m.Snapshot(); s.Trigger != TriggerPeriodic || !s.At.Equal(t0.Add(time.Second)) {
		t.Errorf("second evaluation: trigger %s at %s, want periodic at +1s", s.Trigger, s.At)
	}
	h.clk.Step(500 * time.Millisecond)
	h.wakeups <- TriggerOOMKill
	h.waitIdle(t, 3)
	h.clk.Step(999 * time.Millisecond) // 1.499s after the periodic one, 0.999s after the wakeup
	h.clk.Step(time.Millisecond)
	h.waitIdle(t, 4)
	if s := h.m.Snapshot(); s.Trigger != TriggerPeriodic || !s.At.Equal(t0.Add(2500*time.Millisecond)) {
		t.Errorf("evaluation after the wakeup: %s at %s, want periodic at +2.5s", s.Trigger, s.At)
	}
}

func TestClosedWakeupsLeaveTheFloor(t *testing.T) {
	h := startManager(t, memoryObs(2*gi), Deps{})
	close(h.wakeups)
	h.clk.Step(time.Second)
	h.waitIdle(t, 2)
	h.clk.Step(time.Second)
	h.waitIdle(t, 3)
}

// TestBurstOfWakeupsIsMerged: wakeups queued during an evaluation make one more
// evaluation, not one each.
func TestBurstOfWakeupsIsMerged(t *testing.T) {
	h := startManager(t, memoryObs(2*gi), Deps{})
	gate := make(chan struct{})
	h.src.setGate(gate)
	h.wakeups <- TriggerForkBurst
	waitFor(t, "the first wakeup's evaluation to start", func() bool { return h.src.count() == 2 })
	for range 9 {
		h.wakeups <- TriggerForkBurst
	}
	h.src.setGate(nil)
	gate <- struct{}{}
	h.waitIdle(t, 3)
	if n := len(h.wakeups); n != 0 {
		t.Errorf("%d wakeups left queued", n)
	}
	if n := h.metric("plinth_eviction_evaluations_total", "trigger", "fork-burst"); n != 2 {
		t.Errorf("fork-burst evaluations = %v, want 2: one for the first wakeup, one for the nine queued behind it", n)
	}
}

// TestManagerHysteresis runs the transition period through Run and the fake clock.
func TestManagerHysteresis(t *testing.T) {
	h := startManager(t, memoryObs(50*mi), Deps{})
	if h.status(corev1.NodeMemoryPressure) != corev1.ConditionTrue {
		t.Fatal("not True on the first crossing")
	}
	drainChanged(h.m)
	h.src.set(memoryObs(2*gi), nil)
	n := 1
	for i := 0; i < 299; i++ { // 299 s without a crossing
		h.clk.Step(time.Second)
		n++
		h.waitIdle(t, n)
		if h.status(corev1.NodeMemoryPressure) != corev1.ConditionTrue {
			t.Fatalf("False %d s after the last crossing, within the transition period", i+1)
		}
	}
	drainChanged(h.m) // the first held evaluation changed the shape
	h.clk.Step(time.Second)
	h.waitIdle(t, n+1)
	if got := h.status(corev1.NodeMemoryPressure); got != corev1.ConditionFalse {
		t.Fatalf("MemoryPressure %s a full period after the last crossing, want False", got)
	}
	if !drainChanged(h.m) {
		t.Error("no Changed notification when the condition returned to False")
	}
	if c := h.metric("plinth_eviction_threshold_crossings_total", "signal", "memory.available"); c != 1 {
		t.Errorf("crossings of memory.available = %v, want 1", c)
	}
}

func TestManagerMetrics(t *testing.T) {
	obs := memoryObs(80 * mi)
	obs.Nodefs = &FilesystemStats{CapacityBytes: uint64(100 * gi), AvailableBytes: uint64(50 * gi), Inodes: 1000, InodesFree: 900}
	h := startManager(t, obs, Deps{})
	for _, w := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"plinth_eviction_signal_threshold", []string{"signal", "memory.available", "kind", "hard"}, float64(100 * mi)},
		{"plinth_eviction_signal_threshold", []string{"signal", "nodefs.available", "kind", "hard"}, float64(10 * gi)},
		{"plinth_eviction_signal_threshold", []string{"signal", "nodefs.inodesFree", "kind", "hard"}, 50},
		{"plinth_eviction_signal_value", []string{"signal", "memory.available"}, float64(80 * mi)},
		{"plinth_eviction_signal_value", []string{"signal", "nodefs.available"}, float64(50 * gi)},
		{"plinth_eviction_signal_value", []string{"signal", "nodefs.inodesFree"}, 900},
		{"plinth_eviction_feed_active", []string{"feed", "ebpf-oom"}, 0},
		{"plinth_eviction_feed_active", []string{"feed", "meminfo"}, 1},
	} {
		if got, ok := metricValue(t, h.reg, w.name, w.labels...); !ok || got != w.want {
			t.Errorf("%s%v = %v (present %t), want %v", w.name, w.labels, got, ok, w.want)
		}
	}
	// Signals without an observation have no series: pid and imagefs here.
	if n := seriesCount(t, h.reg, "plinth_eviction_signal_value"); n != 3 {
		t.Errorf("%d signal value series, want 3", n)
	}
	if n := seriesCount(t, h.reg, "plinth_eviction_signal_threshold"); n != 3 {
		t.Errorf("%d threshold series, want 3", n)
	}
	if c := h.metric("plinth_eviction_threshold_crossings_total", "signal", "memory.available"); c != 1 {
		t.Errorf("memory.available crossings = %v, want 1", c)
	}
	if c, ok := metricValue(t, h.reg, "plinth_eviction_threshold_crossings_total", "signal", "pid.available"); !ok || c != 0 {
		t.Errorf("pid.available crossings = %v (present %t), want a series at 0", c, ok)
	}
	// A signal that disappears loses its series.
	h.src.set(memoryObs(80*mi), nil)
	h.clk.Step(time.Second)
	h.waitIdle(t, 2)
	if n := seriesCount(t, h.reg, "plinth_eviction_signal_value"); n != 1 {
		t.Errorf("%d signal value series after nodefs went away, want 1", n)
	}
	if c := h.metric("plinth_eviction_threshold_crossings_total", "signal", "memory.available"); c != 1 {
		t.Errorf("memory.available crossings = %v after staying crossed, want still 1", c)
	}
}

func TestObserveErrorCountsAsNothingCrossed(t *testing.T) {
	h := startManager(t, memoryObs(50*mi), Deps{})
	h.src.set(Observations{}, errFake)
	h.clk.Step(time.Second)
	h.waitIdle(t, 2)
	s := h.m.Snapshot()
	if len(s.Signals) != 0 || s.Thresholds[0].Crossed {
		t.Errorf("after a failed observation: %+v", s)
	}
	if h.status(corev1.NodeMemoryPressure) != corev1.ConditionTrue {
		t.Error("a failed observation cut the transition period short")
	}
}

func TestRunTwiceAndStop(t *testing.T) {
	h := startManager(t, memoryObs(2*gi), Deps{})
	if err := h.m.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
		h.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestNewManagerRefuses(t *testing.T) {
	good := Deps{Source: &fakeSource{}, Logger: discardLogger()}
	cases := map[string]struct {
		cfg  func(*Config)
		deps Deps
	}{
		"no source":           {func(*Config) {}, Deps{Logger: discardLogger()}},
		"no logger":           {func(*Config) {}, Deps{Source: &fakeSource{}}},
		"zero interval":       {func(c *Config) { c.EvaluationInterval = 0 }, good},
		"negative transition": {func(c *Config) { c.PressureTransitionPeriod = -time.Second }, good},
		"zero gone timeout":   {func(c *Config) { c.PodGoneTimeout = 0 }, good},
		"unknown signal":      {func(c *Config) { c.Thresholds = append(c.Thresholds, Threshold{Signal: "x"}) }, good},
	}
	for name, tc := range cases {
		cfg := DefaultConfig()
		tc.cfg(&cfg)
		if _, err := NewManager(cfg, tc.deps); err == nil {
			t.Errorf("%s: NewManager accepted it", name)
		}
	}
	reg := prometheus.NewRegistry()
	good.Registerer = reg
	if _, err := NewManager(DefaultConfig(), good); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManager(DefaultConfig(), good); err == nil {
		t.Error("a second manager registered the same metrics")
	}
}

// ConditionsChanged hears each change of a condition's status, with the conditions
// after it, and nothing while they hold.
func TestConditionsChangedHook(t *testing.T) {
	heard := make(chan []corev1.NodeCondition, 8)
	h := startManager(t, memoryObs(2*gi), Deps{ConditionsChanged: func(c []corev1.NodeCondition) { heard <- c }})
	select {
	case c := <-heard:
		t.Fatalf("hook called without a change: %v", c)
	default:
	}
	h.src.set(memoryObs(50*mi), nil)
	h.clk.Step(time.Second)
	h.waitIdle(t, 2)
	select {
	case c := <-heard:
		var mem corev1.ConditionStatus
		for _, x := range c {
			if x.Type == corev1.NodeMemoryPressure {
				mem = x.Status
			}
		}
		if mem != corev1.ConditionTrue {
			t.Errorf("hook got %v, want MemoryPressure True", c)
		}
	default:
		t.Fatal("hook not called when MemoryPressure rose")
	}
	h.clk.Step(time.Second)
	h.waitIdle(t, 3)
	if len(heard) != 0 {
		t.Errorf("hook called %d times while the conditions held", len(heard))
	}
}
