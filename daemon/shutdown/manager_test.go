package shutdown

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
)

type harness struct {
	t      *testing.T
	clock  *timerClock
	logind *fakeLogind
	pods   *fakePods
	m      *Manager
	cfg    Config
	done   chan error
}

// start runs a Manager over fakes until the test ends.
func start(t *testing.T, bands []Band, pods []*corev1.Pod, hang []string, delayMax time.Duration) *harness {
	t.Helper()
	dir := t.TempDir()
	clk := newTimerClock()
	h := &harness{t: t, clock: clk, logind: newFakeLogind(filepath.Join(dir, "logind.conf.d"), delayMax), done: make(chan error, 1)}
	h.pods = &fakePods{clock: clk, pods: pods, hang: map[string]bool{}, calls: make(chan termination, 100)}
	for _, n := range hang {
		h.pods.hang[n] = true
	}
	h.cfg = Config{Bands: bands, StateFile: filepath.Join(dir, "state", StateFileName), LogindConfDir: h.logind.confDir,
		Dial: func(context.Context) (Logind, error) { return h.logind, nil }, Pods: h.pods,
		Clock: clk, Registerer: prometheus.NewRegistry(), Logger: testLogger(t)}
	return h
}

func (h *harness) run() {
	h.t.Helper()
	m, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- m.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := within(h.t, h.done, "Run to return"); err != nil {
			h.t.Errorf("Run() = %v", err)
		}
	})
}

func (h *harness) expectCall(name string, grace time.Duration, at time.Time) termination {
	h.t.Helper()
	c := within(h.t, h.pods.calls, "Terminate("+name+")")
	if c.pod != name || c.grace != grace || !c.at.Equal(at) {
		h.t.Fatalf("Terminate(%s, %v) at %v, want Terminate(%s, %v) at %v", c.pod, c.grace, c.at, name, grace, at)
	}
	return c
}

func (h *harness) expectTimer(d time.Duration) {
	h.t.Helper()
	if got := within(h.t, h.clock.timers, "a timer"); got != d {
		h.t.Fatalf("timer of %v, want %v", got, d)
	}
}

func (h *harness) expectLock(event string) {
	h.t.Helper()
	if got := within(h.t, h.logind.lockEvents, "lock "+event); got != event {
		h.t.Fatalf("lock %s, want %s", got, event)
	}
}

func (h *harness) state() State {
	h.t.Helper()
	st, err := ReadState(h.cfg.StateFile)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) gauges() (start, end float64) {
	return testutil.ToFloat64(h.m.metrics.start), testutil.ToFloat64(h.m.metrics.end)
}

func TestShutdownStopsPodsBandByBandEachWithinItsTime(t *testing.T) {
	bands := []Band{{0, 10 * time.Second}, {500, 7 * time.Second}, {1000, 20 * time.Second}, {2000000000, 5 * time.Second}}
	pods := []*corev1.Pod{
		pod("regular", nil, "", 30),
		pod("stubborn", prio(1000), "", 30), // ignores SIGTERM: its band's time runs out
		pod("quick", prio(1000), "", 4),
		pod("critical", nil, "system-node-critical", 3),
	}
	h := start(t, bands, pods, []string{"stubborn"}, time.Minute)
	h.run()
	h.expectLock("taken")
	if h.m.ShuttingDown() {
		t.Fatal("shutting down before any signal")
	}
	t0 := h.clock.Now()

	h.logind.events <- true
	h.expectCall("regular", 10*time.Second, t0)
	within(t, h.m.Changed(), "Changed after the shutdown began")
	if !h.m.ShuttingDown() {
		t.Error("not shutting down after PrepareForShutdown(true)")
	}
	if st := h.state(); !st.StartTime.Equal(t0) || !st.EndTime.IsZero() {
		t.Errorf("state during the shutdown = %+v, want start %v and no end", st, t0)
	}
	if s, e := h.gauges(); s != float64(t0.Unix()) || e != 0 {
		t.Errorf("gauges during the shutdown = %v/%v, want %v/0", s, e, t0.Unix())
	}
	h.expectTimer(10 * time.Second) // band 0; its pod stops at once, so no time passes

	// Band 500 is empty and costs nothing: band 1000 starts at t0. Its pods stop
	// together, each with the shorter of the band's time and its own.
	var got []string
	var stubborn termination
	for range 2 {
		c := within(t, h.pods.calls, "Terminate in band 1000")
		if !c.at.Equal(t0) {
			t.Errorf("%s stopped at %v, want %v (the empty band must not wait)", c.pod, c.at, t0)
		}
		got = append(got, c.pod)
		switch c.pod {
		case "stubborn":
			stubborn = c
			if c.grace != 20*time.Second {
				t.Errorf("stubborn got %v, want the band's 20s", c.grace)
			}
		case "quick":
			if c.grace != 4*time.Second {
				t.Errorf("quick got %v, want its own 4s", c.grace)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"quick", "stubborn"}) {
		t.Fatalf("band 1000 stopped %v", got)
	}
	h.expectTimer(20 * time.Second)
	select {
	case <-stubborn.ctx.Done():
		t.Fatal("the band was given up before its time")
	default:
	}
	h.clock.Step(20 * time.Second)
	within(t, stubborn.ctx.Done(), "the stubborn pod's wait to be cut off")

	h.expectCall("critical", 3*time.Second, t0.Add(20*time.Second))
	h.expectTimer(5 * time.Second)
	h.expectLock("released")
	end := t0.Add(20 * time.Second)
	if st := h.state(); !st.StartTime.Equal(t0) || !st.EndTime.Equal(end) {
		t.Errorf("state after the shutdown = %+v, want %v to %v", st, t0, end)
	}
	if s, e := h.gauges(); s != float64(t0.Unix()) || e != float64(end.Unix()) {
		t.Errorf("gauges after the shutdown = %v/%v, want %v/%v", s, e, t0.Unix(), end.Unix())
	}
	if !h.m.ShuttingDown() {
		t.Error("the node left the shutting-down state before the machine went down")
	}
	if held := h.logind.lockStates(); !slices.Equal(held, []bool{false}) {
		t.Errorf("locks held %v, want the one lock released", held)
	}
}

func TestCancelledShutdownReturnsToReadyAndTakesTheLockAgain(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, []*corev1.Pod{pod("web", nil, "", 30)}, []string{"web"}, time.Minute)
	h.run()
	h.expectLock("taken")
	t0 := h.clock.Now()

	// Cancelled mid-way: the pod's stop is given up, the lock was never released.
	h.logind.events <- true
	c := h.expectCall("web", 30*time.Second, t0)
	within(t, h.m.Changed(), "Changed on shutdown")
	h.expectTimer(30 * time.Second)
	h.logind.events <- false
	within(t, c.ctx.Done(), "the pod's stop to be given up")
	within(t, h.m.Changed(), "Changed on cancellation")
	if h.m.ShuttingDown() {
		t.Error("still shutting down after PrepareForShutdown(false)")
	}
	if held := h.logind.lockStates(); !slices.Equal(held, []bool{true}) {
		t.Errorf("locks %v, want the first one still held", held)
	}

	// A shutdown that ran to its end, then cancelled (logind's delay ran out on another
	// lock, or an administrator cancelled): a new lock is taken.
	h.logind.events <- true
	h.expectCall("web", 30*time.Second, t0)
	h.expectTimer(30 * time.Second)
	h.clock.Step(30 * time.Second)
	h.expectLock("released")
	h.logind.events <- false
	h.expectLock("taken")
	if h.m.ShuttingDown() {
		t.Error("still shutting down after the second cancellation")
	}
	if held := h.logind.lockStates(); !slices.Equal(held, []bool{false, true}) {
		t.Errorf("locks %v, want the first released and a second held", held)
	}
	if st := h.state(); !st.StartTime.Equal(t0) || !st.EndTime.Equal(t0.Add(30*time.Second)) {
		t.Errorf("state = %+v", st)
	}
}

func TestRaisesLogindInhibitDelayThroughADropIn(t *testing.T) {
	bands := []Band{{0, 20 * time.Second}, {2000000000, 10*time.Second + 500*time.Millisecond}}
	h := start(t, bands, nil, nil, 5*time.Second)
	h.run()
	h.expectLock("taken")
	b, err := os.ReadFile(filepath.Join(h.cfg.LogindConfDir, DropInName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "[Login]\nInhibitDelayMaxSec=31\n") {
		t.Errorf("drop-in:\n%s\nwant [Login] InhibitDelayMaxSec=31 (30.5s rounded up)", b)
	}
	h.logind.mu.Lock()
	defer h.logind.mu.Unlock()
	if h.logind.reloads != 1 || h.logind.delayMax != 31*time.Second {
		t.Errorf("logind reloaded %d times, delay %v; want once, 31s", h.logind.reloads, h.logind.delayMax)
	}
}

func TestLeavesLogindAloneWhenItsDelayIsLongEnough(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, nil, nil, 30*time.Second)
	h.run()
	h.expectLock("taken")
	if _, err := os.Stat(filepath.Join(h.cfg.LogindConfDir, DropInName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in written though logind's delay sufficed: %v", err)
	}
}

// When another drop-in wins, plinthd still takes the lock (pods get what logind allows)
// after polling logind a bounded number of times.
func TestTakesTheLockEvenWhenLogindKeepsAShorterDelay(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, nil, nil, 5*time.Second)
	h.logind.stuck = true
	h.run()
	for range reloadPolls {
		h.expectTimer(reloadPollInterval)
		h.clock.Step(reloadPollInterval)
	}
	h.expectLock("taken")
}

func TestLogindUnavailableEndsRunAtOnce(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, nil, nil, 0)
	h.cfg.Dial = func(context.Context) (Logind, error) { return nil, errors.New("no system bus") }
	m, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	if !errors.Is(err, ErrLogindUnavailable) || !strings.Contains(err.Error(), "no system bus") {
		t.Errorf("Run() = %v, want ErrLogindUnavailable with the reason", err)
	}
}

func TestReconnectsWhenTheConnectionIsLost(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, nil, nil, time.Minute)
	first := h.logind
	second := newFakeLogind(first.confDir, time.Minute)
	var mu sync.Mutex
	dials := 0
	h.cfg.Dial = func(context.Context) (Logind, error) {
		mu.Lock()
		defer mu.Unlock()
		dials++
		if dials == 1 {
			return first, nil
		}
		return second, nil
	}
	h.run()
	h.expectLock("taken")
	close(first.events) // the bus went away
	h.expectLock("released")
	h.expectTimer(redialInitial)
	h.clock.Step(redialInitial)
	if got := within(t, second.lockEvents, "the lock on the new connection"); got != "taken" {
		t.Fatalf("lock %s on the new connection", got)
	}
	first.mu.Lock()
	closed := first.closed
	first.mu.Unlock()
	if !closed {
		t.Error("the lost connection was not closed")
	}
}

// After a restart (the machine rebooted) the gauges show the last shutdown.
func TestMetricsShowTheLastShutdownAfterARestart(t *testing.T) {
	h := start(t, []Band{{0, 30 * time.Second}}, nil, nil, time.Minute)
	last := State{StartTime: time.Unix(1700000000, 0).UTC(), EndTime: time.Unix(1700000025, 0).UTC()}
	if err := writeState(h.cfg.StateFile, last); err != nil {
		t.Fatal(err)
	}
	h.run()
	h.expectLock("taken")
	if s, e := h.gauges(); s != 1700000000 || e != 1700000025 {
		t.Errorf("gauges = %v/%v, want the last shutdown's 1700000000/1700000025", s, e)
	}
}
