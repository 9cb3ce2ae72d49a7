package images

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Image pull back-off as kubelet's: 10 s after the first failure, doubling to 5 min;
// an entry idle for twice the maximum is forgotten, so a pull failing again much later
// starts at 10 s.
const (
	pullBackoffInitial = 10 * time.Second
	pullBackoffMax     = 5 * time.Minute
)

// pullBackoff remembers, per key (an image, or a pod's image), when the last pull failed
// and how long to wait before the next attempt. It is safe for concurrent use.
type pullBackoff struct {
	clock   clock.PassiveClock
	initial time.Duration
	max     time.Duration

	mu      sync.Mutex
	entries map[string]backoffEntry
}

type backoffEntry struct {
	lastFailure time.Time
	delay       time.Duration
	lastErr     error
}

func newPullBackoff(c clock.PassiveClock) *pullBackoff {
	return &pullBackoff{clock: c, initial: pullBackoffInitial, max: pullBackoffMax, entries: map[string]backoffEntry{}}
}

// inBackoff reports whether key failed recently enough that no pull may be tried,
// until when, and the error of the last attempt.
func (b *pullBackoff) inBackoff(key string) (bool, time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, time.Time{}, nil
	}
	until := e.lastFailure.Add(e.delay)
	return b.clock.Now().Before(until), until, e.lastErr
}

// failed records a failed pull: the first failure (or one after a long quiet spell)
// waits initial, each later one twice the previous wait, up to max.
func (b *pullBackoff) failed(key string, err error) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.gcLocked(now)
	e, ok := b.entries[key]
	if !ok {
		e.delay = b.initial
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastFailure = now
	e.lastErr = err
	b.entries[key] = e
	return e.delay
}

// succeeded forgets key's failures.
func (b *pullBackoff) succeeded(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

func (b *pullBackoff) gcLocked(now time.Time) {
	for k, e := range b.entries {
		if now.Sub(e.lastFailure) > 2*b.max {
			delete(b.entries, k)
		}
	}
}
