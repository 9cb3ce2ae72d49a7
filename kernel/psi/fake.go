package psi

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// FakeTrigger stands in for a Trigger in consumers' unit tests: Fire makes Wait return
// nil, Fail makes it return an error. Like the kernel, firings that nobody waits for
// collapse into one.
type FakeTrigger struct {
	clock  clock.PassiveClock
	fired  chan struct{}
	mu     sync.Mutex
	failed error
	failc  chan struct{}
	pump   eventPump
}

// NewFakeTrigger returns a FakeTrigger whose Events are stamped with clk.
func NewFakeTrigger(clk clock.PassiveClock) *FakeTrigger {
	return &FakeTrigger{clock: clk, fired: make(chan struct{}, 1), failc: make(chan struct{})}
}

// Fire wakes a waiter, or the next one if none waits.
func (f *FakeTrigger) Fire() {
	select {
	case f.fired <- struct{}{}:
	default:
	}
}

// Fail makes every Wait from now on return err, as a real trigger does when its cgroup
// is removed. Only the first call counts.
func (f *FakeTrigger) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
		close(f.failc)
	}
}

// Wait returns nil after Fire, ctx.Err() when ctx is done, or the error given to Fail.
func (f *FakeTrigger) Wait(ctx context.Context) error {
	if err := f.failure(); err != nil {
		return err
	}
	select {
	case <-f.fired:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-f.failc:
		return f.failure()
	}
}

func (f *FakeTrigger) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Events behaves as Trigger.Events.
func (f *FakeTrigger) Events(ctx context.Context) <-chan time.Time {
	return f.pump.start(ctx, f, f.clock)
}

// Err behaves as Trigger.Err.
func (f *FakeTrigger) Err() error { return f.pump.err() }
