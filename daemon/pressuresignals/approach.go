package pressuresignals

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/pressure"
)

// TriggerApproach names the evaluations asked for because a signal is falling fast
// enough to cross a threshold before the next periodic evaluation.
const TriggerApproach pressure.Trigger = "approach"

// Tuning of the approach prediction.
const (
	// approachMinSpan is the shortest time a fall is measured over, so the jitter of
	// two readings close together (a hog touching pages in bursts) is not taken for a
	// rate.
	approachMinSpan = 200 * time.Millisecond
	// approachMinDelay bounds how often a signal hovering just above its threshold
	// can make the manager evaluate: at most 20 times a second.
	approachMinDelay = 50 * time.Millisecond
	// approachMaxPoints bounds the history kept per signal.
	approachMaxPoints = 64
)

// approach watches how fast each signal falls and asks for an evaluation shortly
// before a threshold would be crossed, when that is sooner than the periodic one.
//
// The periodic evaluation alone may see a crossing up to a whole interval late, and
// a pod allocating 200 MiB/s passes a 100Mi threshold and reaches its limit in half a
// second: the kernel OOM killer would act first. PSI and reclaim give no warning
// here, since anonymous memory filling a cgroup stalls nobody until the limit is hit.
// So from the last observations it estimates when the signal will cross, and asks to
// be woken at half that time, again and again, closing in on the crossing in a
// handful of cheap evaluations; a steady or rising signal costs nothing.
type approach struct {
	thresholds []pressure.Threshold
	interval   time.Duration
	clock      clock.WithDelayedExecution
	wake       func()

	// stopped is read by the timer's callback, which fake clocks run under their own
	// lock: the callback must take no lock that observe holds while arming a timer.
	stopped atomic.Bool

	mu      sync.Mutex
	history map[pressure.Signal][]point
	timer   clock.Timer
	due     time.Time // when the armed timer fires
}

type point struct {
	at        time.Time
	available int64
}

func newApproach(thresholds []pressure.Threshold, interval time.Duration, clk clock.WithDelayedExecution, wake func()) *approach {
	return &approach{thresholds: thresholds, interval: interval, clock: clk, wake: wake,
		history: map[pressure.Signal][]point{}}
}

// observe records the samples of one observation and arms (or disarms) the early
// wakeup.
func (a *approach) observe(now time.Time, samples map[pressure.Signal]pressure.Sample) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped.Load() {
		return
	}
	delay, ok := a.plan(now, samples)
	if !ok {
		return // the periodic evaluation comes soon enough; an armed wakeup stays
	}
	due := now.Add(delay)
	if a.timer != nil && a.due.After(now) && !a.due.After(due) {
		return // an earlier wakeup is already armed
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	a.due = due
	a.timer = a.clock.AfterFunc(delay, a.fired)
}

func (a *approach) fired() {
	if !a.stopped.Load() {
		a.wake()
	}
}

// stop disarms the wakeup for good.
func (a *approach) stop() {
	a.stopped.Store(true)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
}

// plan records the samples and returns how long to wait before the next evaluation,
// when some threshold is predicted to be crossed sooner than the evaluation interval.
func (a *approach) plan(now time.Time, samples map[pressure.Signal]pressure.Sample) (time.Duration, bool) {
	for sig, s := range samples {
		a.history[sig] = trimHistory(append(a.history[sig], point{now, s.Available}), now)
	}
	for sig := range a.history {
		if _, ok := samples[sig]; !ok {
			delete(a.history, sig) // unobserved now: an old rate means nothing later
		}
	}
	var best time.Duration
	found := false
	for _, t := range a.thresholds {
		s, ok := samples[t.Signal]
		if !ok {
			continue
		}
		gap := s.Available - t.Value.Resolve(s.Capacity)
		if gap < 0 {
			continue // crossed already (the manager's test is available < target)
		}
		base, ok := baseline(a.history[t.Signal], now)
		if !ok {
			continue
		}
		fall, span := base.available-s.Available, now.Sub(base.at)
		if fall <= 0 {
			continue
		}
		eta := time.Duration(float64(gap) / float64(fall) * float64(span))
		if eta >= a.interval {
			continue
		}
		if d := max(eta/2, approachMinDelay); !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}

// baseline is the newest point at least approachMinSpan older than now.
func baseline(h []point, now time.Time) (point, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if now.Sub(h[i].at) >= approachMinSpan {
			return h[i], true
		}
	}
	return point{}, false
}

// trimHistory drops points older than the newest one that can serve as a baseline,
// and bounds the length.
func trimHistory(h []point, now time.Time) []point {
	keep := 0
	for i := len(h) - 1; i >= 0; i-- {
		if now.Sub(h[i].at) >= approachMinSpan {
			keep = i
			break
		}
	}
	h = h[keep:]
	if len(h) > approachMaxPoints {
		h = h[len(h)-approachMaxPoints:]
	}
	return h
}
