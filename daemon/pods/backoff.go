package pods

import "time"

// Crash-loop backoff as the Pod lifecycle documents it: restarts wait 10 s, 20 s, 40 s
// ... up to 5 minutes; a container that ran 10 minutes without trouble starts over.
const (
	InitialBackoff = 10 * time.Second
	MaxBackoff     = 5 * time.Minute
	BackoffReset   = 10 * time.Minute
)

// Backoff is one container's restart backoff.
type Backoff struct {
	// Delay is the wait before the next restart; 0 before the first failure.
	Delay time.Duration
	// Until is when the next restart may happen.
	Until time.Time
}

// Failed records a run from started to finished that ended and is to be restarted.
func (b *Backoff) Failed(started, finished time.Time) {
	switch {
	case !started.IsZero() && finished.Sub(started) >= BackoffReset:
		b.Delay = InitialBackoff
	case b.Delay == 0:
		b.Delay = InitialBackoff
	default:
		b.Delay = min(2*b.Delay, MaxBackoff)
	}
	b.Until = finished.Add(b.Delay)
}

// Ready tells whether a restart may happen at now.
func (b Backoff) Ready(now time.Time) bool { return !now.Before(b.Until) }
