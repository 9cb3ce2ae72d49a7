package node

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// aliveSlack is added to twice a loop's longest wait before its liveness check fails,
// to cover one attempt's own duration and scheduling delays.
const aliveSlack = 5 * time.Second

// loopLiveness records when a control loop last finished an iteration, successful or
// not. It answers "is the loop still turning?", which is what the systemd watchdog
// should act on; whether the control service answered is a different question, and a
// node must keep running while it does not (fail static).
type loopLiveness struct {
	name       string
	clock      clock.PassiveClock
	staleAfter time.Duration

	mu      sync.Mutex
	started bool
	stopped bool
	last    time.Time
}

func newLoopLiveness(name string, clk clock.PassiveClock, longestWait time.Duration) *loopLiveness {
	return &loopLiveness{name: name, clock: clk, staleAfter: 2*longestWait + aliveSlack}
}

// start marks the loop as running; the first iteration is due within staleAfter.
func (l *loopLiveness) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started, l.stopped, l.last = true, false, l.clock.Now()
}

// iterated records a finished iteration.
func (l *loopLiveness) iterated() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = l.clock.Now()
}

func (l *loopLiveness) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}

// alive is nil while the loop iterates often enough, and also before it has been
// started, so that a caller may register the check before starting the loop (for
// example while registration is still retrying).
func (l *loopLiveness) alive() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.started:
		return nil
	case l.stopped:
		return fmt.Errorf("%s loop has stopped", l.name)
	}
	if since := l.clock.Since(l.last); since > l.staleAfter {
		return fmt.Errorf("%s loop has not finished an iteration for %s (last at %s); allowed %s",
			l.name, since.Round(time.Millisecond), l.last.UTC().Format(time.RFC3339), l.staleAfter)
	}
	return nil
}
