package psi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// StallKind picks which stall a trigger measures: Some (at least one task stalled) or
// Full (all non-idle tasks stalled at once).
type StallKind int

const (
	Some StallKind = iota + 1
	Full
)

// String returns the keyword the kernel expects: "some" or "full".
func (k StallKind) String() string {
	switch k {
	case Some:
		return "some"
	case Full:
		return "full"
	}
	return fmt.Sprintf("StallKind(%d)", int(k))
}

// The kernel accepts trigger windows from 500 ms to 10 s (kernel/sched/psi.c), and
// from a process without CAP_SYS_RESOURCE only multiples of 2 s.
const (
	MinWindow              = 500 * time.Millisecond
	MaxWindow              = 10 * time.Second
	UnprivilegedWindowStep = 2 * time.Second
)

var (
	// ErrClosed is returned by Wait once the trigger is closed.
	ErrClosed = errors.New("psi trigger closed")
	// ErrGone is wrapped by Wait's error when the kernel dropped the trigger, which
	// happens when its cgroup is removed.
	ErrGone = errors.New("psi trigger gone")
)

// Waiter is what a consumer of PSI triggers depends on; *Trigger and *FakeTrigger
// implement it.
type Waiter interface {
	// Wait blocks until the trigger fires (nil), ctx is done (ctx.Err()) or the trigger
	// fails or is closed (an error).
	Wait(ctx context.Context) error
}

// TriggerSpec returns the text written to a pressure file to arm a trigger, for example
// "some 50000 500000" for 50 ms of stall per 500 ms window. It checks the rules the kernel
// enforces, so a bad threshold is reported with the value rather than as EINVAL.
func TriggerSpec(kind StallKind, stall, window time.Duration) (string, error) {
	if kind != Some && kind != Full {
		return "", fmt.Errorf("psi trigger: stall kind %v: want Some or Full", kind)
	}
	if window < MinWindow || window > MaxWindow {
		return "", fmt.Errorf("psi trigger: window %v: want %v to %v", window, MinWindow, MaxWindow)
	}
	if window%time.Microsecond != 0 {
		return "", fmt.Errorf("psi trigger: window %v: want a whole number of microseconds", window)
	}
	if stall <= 0 || stall > window {
		return "", fmt.Errorf("psi trigger: stall threshold %v: want more than 0 and at most the window %v", stall, window)
	}
	if stall%time.Microsecond != 0 {
		return "", fmt.Errorf("psi trigger: stall threshold %v: want a whole number of microseconds", stall)
	}
	return fmt.Sprintf("%s %d %d", kind, stall.Microseconds(), window.Microseconds()), nil
}

// TriggerOption adjusts a Trigger made by NewTrigger.
type TriggerOption func(*triggerOptions)

type triggerOptions struct {
	clock clock.PassiveClock
}

// WithClock sets the clock that stamps the times sent by Events (the real clock by
// default).
func WithClock(c clock.PassiveClock) TriggerOption {
	return func(o *triggerOptions) { o.clock = c }
}

// Trigger is an armed PSI trigger: the kernel wakes Wait at most once per window when
// the stall time within the window exceeds the threshold. Wait may be called from one
// goroutine at a time (concurrent callers queue); Close may be called from any goroutine
// and wakes a blocked Wait.
type Trigger struct {
	path   string
	spec   string
	clock  clock.PassiveClock
	sys    triggerSys // the file descriptors (trigger_linux.go)
	mu     sync.Mutex // held by Wait while it polls; Close takes it before closing fds
	closed atomic.Bool
	pump   eventPump
}

// Path is the pressure file the trigger is armed on.
func (t *Trigger) Path() string { return t.path }

// Spec is the text that armed the trigger, such as "some 50000 500000".
func (t *Trigger) Spec() string { return t.spec }

// Events runs a goroutine, stopped by ctx, that calls Wait in a loop and sends the time
// of each firing. The channel holds one pending event: firings while the consumer is
// busy collapse into it, which is what a "re-evaluate now" signal needs. The channel is
// closed when ctx is done or Wait fails; Err then tells why. Call Events once per
// trigger.
func (t *Trigger) Events(ctx context.Context) <-chan time.Time {
	return t.pump.start(ctx, t, t.clock)
}

// Err returns the error that closed the Events channel, or nil if ctx ended it or the
// trigger was closed.
func (t *Trigger) Err() error { return t.pump.err() }

// eventPump turns a Waiter into a channel of firing times.
type eventPump struct {
	mu      sync.Mutex
	lastErr error
}

func (p *eventPump) start(ctx context.Context, w Waiter, clk clock.PassiveClock) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		defer close(ch)
		for {
			err := w.Wait(ctx)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
					p.mu.Lock()
					p.lastErr = err
					p.mu.Unlock()
				}
				return
			}
			select {
			case ch <- clk.Now():
			default: // one event is already pending; the consumer will see it
			}
		}
	}()
	return ch
}

func (p *eventPump) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func newTriggerOptions(opts []TriggerOption) triggerOptions {
	o := triggerOptions{clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
