package proxy

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// syncRunner decides when the proxy syncs. Requests coalesce: a sync starts no sooner
// than minInterval after the previous one started, so a burst of changes costs one
// sync. A full sync runs when fullInterval passed since the last full one (or one was
// asked for); a failed sync is retried after a backoff that starts at minInterval and
// doubles up to fullInterval, and the retry is full.
type syncRunner struct {
	clock        clock.WithTicker
	minInterval  time.Duration
	fullInterval time.Duration
	sync         func(ctx context.Context, full bool) error

	kick chan bool // true asks for a full sync

	// idle, when set (tests only), is called each time the loop is about to wait.
	idle func()
}

func newSyncRunner(c clock.WithTicker, minInterval, fullInterval time.Duration, sync func(context.Context, bool) error) *syncRunner {
	return &syncRunner{clock: c, minInterval: minInterval, fullInterval: fullInterval, sync: sync, kick: make(chan bool, 1)}
}

// request asks for a sync soon (full: a full one). It never blocks.
func (r *syncRunner) request(full bool) {
	for {
		select {
		case r.kick <- full:
			return
		default:
		}
		// A request is already queued; replace it with one that is at least as full.
		select {
		case prev := <-r.kick:
			full = full || prev
		default:
		}
	}
}

// run syncs until ctx is done, starting with a full sync at once.
func (r *syncRunner) run(ctx context.Context) {
	var (
		lastStart         time.Time
		nextFull          = r.clock.Now()
		pending, wantFull = false, true
		failures          int
		retryAt           time.Time // set while a failed sync waits for its retry
	)
	// The first sync is full, so requests made before it are already covered.
	select {
	case <-r.kick:
	default:
	}
	for {
		now := r.clock.Now()
		due := nextFull
		if !retryAt.IsZero() {
			due = retryAt
		}
		if pending {
			if at := lastStart.Add(r.minInterval); at.Before(due) {
				due = at
			}
		}
		if !due.After(now) {
			full := wantFull || !retryAt.IsZero() || !now.Before(nextFull)
			lastStart = now
			pending, wantFull = false, false
			if err := r.sync(ctx, full); err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				retryAt = now.Add(r.backoff(failures))
				continue
			}
			failures, retryAt = 0, time.Time{}
			if full {
				nextFull = now.Add(r.fullInterval)
			}
			continue
		}
		timer := r.clock.NewTimer(due.Sub(now))
		if r.idle != nil {
			r.idle()
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case full := <-r.kick:
			pending = true
			wantFull = wantFull || full
		case <-timer.C():
		}
		timer.Stop()
	}
}

// backoff is the wait before retry number n (1-based): minInterval doubling, capped at
// fullInterval.
func (r *syncRunner) backoff(n int) time.Duration {
	d := r.minInterval
	for i := 1; i < n && d < r.fullInterval; i++ {
		d *= 2
	}
	return min(d, r.fullInterval)
}
