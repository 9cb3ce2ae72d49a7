package apiserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent probes share one run of the check, a prober that hangs up does not fail
// the others, and the result serves until it is maxAge old.
func TestSharedCheck(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	release := make(chan struct{})
	failing := errors.New("etcd: no quorum")
	c := &sharedCheck{maxAge: time.Second, now: func() time.Time { return now }, check: func(ctx context.Context) error {
		calls.Add(1)
		select {
		case <-release:
			return failing
		case <-ctx.Done():
			return ctx.Err()
		}
	}}

	hungUp, hangUp := context.WithCancel(context.Background())
	results := make(chan error, 10)
	var wg sync.WaitGroup
	wg.Go(func() { results <- c.run(hungUp) }) // the first caller runs the check
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for range 9 {
		wg.Go(func() { results <- c.run(context.Background()) })
	}
	hangUp()
	time.Sleep(10 * time.Millisecond) // let the waiters block on the run in flight
	close(release)
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, failing) {
			t.Errorf("a probe got %v, want the shared run's %v", err, failing)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the check ran %d times for 10 concurrent probes, want once", n)
	}

	now = now.Add(999 * time.Millisecond)
	if err := c.run(context.Background()); !errors.Is(err, failing) || calls.Load() != 1 {
		t.Errorf("within maxAge: %v after %d runs, want the cached result without a run", err, calls.Load())
	}
	now = now.Add(time.Millisecond)
	c.check = func(context.Context) error { calls.Add(1); return nil }
	if err := c.run(context.Background()); err != nil || calls.Load() != 2 {
		t.Errorf("after maxAge: %v after %d runs, want a fresh run passing", err, calls.Load())
	}
}
