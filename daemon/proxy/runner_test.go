package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// runnerHarness runs a syncRunner on a fake clock. Each sync blocks until the test
// answers it, and the runner blocks each time it goes idle until the test notices, so
// the test always knows what the runner is doing.
type runnerHarness struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	runner *syncRunner
	calls  chan syncCall
	idle   chan struct{}
	done   chan struct{}
}

type syncCall struct {
	full   bool
	at     time.Time
	result chan error
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func startRunner(t *testing.T) *runnerHarness {
	h := &runnerHarness{t: t, clock: testingclock.NewFakeClock(t0), calls: make(chan syncCall), idle: make(chan struct{}), done: make(chan struct{})}
	h.runner = newSyncRunner(h.clock, time.Second, 30*time.Second, func(ctx context.Context, full bool) error {
		c := syncCall{full: full, at: h.clock.Now(), result: make(chan error)}
		select {
		case h.calls <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		return <-c.result
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.runner.idle = func() {
		select {
		case h.idle <- struct{}{}:
		case <-ctx.Done():
		}
	}
	go func() { defer close(h.done); h.runner.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// expectSync waits for the next sync, checks its kind and fake time, and answers it.
func (h *runnerHarness) expectSync(full bool, at time.Duration, result error) {
	h.t.Helper()
	select {
	case c := <-h.calls:
		if c.full != full || !c.at.Equal(t0.Add(at)) {
			h.t.Fatalf("sync full=%v at %s, want full=%v at %s", c.full, c.at.Sub(t0), full, at)
		}
		c.result <- result
	case <-h.idle:
		h.t.Fatalf("runner went idle, want a sync (full=%v) at %s", full, at)
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no sync (full=%v at %s) within 10 s of real time", full, at)
	}
}

// expectIdle waits until the runner waits again without syncing.
func (h *runnerHarness) expectIdle() {
	h.t.Helper()
	select {
	case <-h.idle:
	case c := <-h.calls:
		h.t.Fatalf("unexpected sync full=%v at %s", c.full, c.at.Sub(t0))
	case <-time.After(10 * time.Second):
		h.t.Fatal("runner never went idle")
	}
}

// stepTo moves the fake clock to t0+d.
func (h *runnerHarness) stepTo(d time.Duration) { h.clock.SetTime(t0.Add(d)) }

func TestRunnerStartsWithFullSyncAndCoalesces(t *testing.T) {
	h := startRunner(t)
	h.expectSync(true, 0, nil)
	h.expectIdle()

	// Three changes within minSyncPeriod of the last sync: one partial sync, at 1 s.
	h.stepTo(300 * time.Millisecond)
	h.runner.request(false)
	h.expectIdle()
	h.stepTo(600 * time.Millisecond)
	h.runner.request(false)
	h.expectIdle()
	h.runner.request(false)
	h.expectIdle()
	h.stepTo(999 * time.Millisecond)
	h.stepTo(time.Second)
	h.expectSync(false, time.Second, nil)
	h.expectIdle()

	// A change long after the last sync runs at once.
	h.stepTo(10 * time.Second)
	h.runner.request(false)
	h.expectSync(false, 10*time.Second, nil)
	h.expectIdle()
}

func TestRunnerFullResyncEverySyncPeriod(t *testing.T) {
	h := startRunner(t)
	h.expectSync(true, 0, nil)
	h.expectIdle()
	// A partial sync in between does not move the full resync.
	h.stepTo(5 * time.Second)
	h.runner.request(false)
	h.expectSync(false, 5*time.Second, nil)
	h.expectIdle()
	h.stepTo(29 * time.Second)
	h.stepTo(30 * time.Second)
	h.expectSync(true, 30*time.Second, nil)
	h.expectIdle()
	h.stepTo(60 * time.Second)
	h.expectSync(true, 60*time.Second, nil)
	h.expectIdle()
}

func TestRunnerFullRequest(t *testing.T) {
	h := startRunner(t)
	h.expectSync(true, 0, nil)
	h.expectIdle()
	h.stepTo(2 * time.Second)
	h.runner.request(true)
	h.expectSync(true, 2*time.Second, nil)
	h.expectIdle()
	// A full request merged with a partial one while waiting stays full.
	h.stepTo(2500 * time.Millisecond)
	h.runner.request(false)
	h.expectIdle()
	h.runner.request(true)
	h.expectIdle()
	h.stepTo(3 * time.Second)
	h.expectSync(true, 3*time.Second, nil)
	h.expectIdle()
}

func TestRunnerRetriesWithBackoff(t *testing.T) {
	h := startRunner(t)
	errBatch := errors.New("netlink: batch refused")
	h.expectSync(true, 0, errBatch)
	h.expectIdle()
	// Backoff 1 s, 2 s, 4 s, 8 s, 16 s, then capped at syncPeriod (30 s); retries are full.
	at := time.Duration(0)
	for _, wait := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		at += wait * time.Second
		h.stepTo(at - time.Millisecond)
		h.stepTo(at)
		h.expectSync(true, at, errBatch)
		h.expectIdle()
	}
	// A change during the backoff runs after minSyncPeriod, sooner than the retry, and
	// is full; success ends the backoff.
	h.stepTo(at + 2*time.Second)
	h.runner.request(false)
	h.expectSync(true, at+2*time.Second, nil)
	h.expectIdle()
	h.stepTo(at + 3*time.Second)
	h.runner.request(false)
	h.expectSync(false, at+3*time.Second, nil)
	h.expectIdle()
	h.stepTo(at + 32*time.Second)
	h.expectSync(true, at+32*time.Second, nil)
	h.expectIdle()
}

func TestRunnerStopsWithContext(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	r := newSyncRunner(c, time.Second, 30*time.Second, func(context.Context, bool) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
}
