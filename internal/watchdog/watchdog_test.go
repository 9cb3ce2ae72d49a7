package watchdog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// guard bounds every wait so a broken Run fails the test instead of hanging it. It is
// not a timing assertion: everything below happens in lockstep with the fake clock.
const guard = 10 * time.Second

// switchableHealth is a health check whose result the test sets, and which reports
// each call on calls so the test knows a tick has been handled.
type switchableHealth struct {
	mu    sync.Mutex
	err   error
	calls chan struct{}
}

func newSwitchableHealth() *switchableHealth {
	return &switchableHealth{calls: make(chan struct{}, 100)}
}

func (h *switchableHealth) set(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

func (h *switchableHealth) check() error {
	h.mu.Lock()
	err := h.err
	h.mu.Unlock()
	h.calls <- struct{}{}
	return err
}

func (h *switchableHealth) waitCall(t *testing.T) {
	t.Helper()
	select {
	case <-h.calls:
	case <-time.After(guard):
		t.Fatal("health check was not called")
	}
}

// lockedBuffer collects log output written from Run's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	clock    *clocktesting.FakeClock
	notifier *RecordingNotifier
	health   *switchableHealth
	logs     *lockedBuffer
	cancel   context.CancelFunc
	done     chan error
}

const testInterval = 5 * time.Second

func startWatchdog(t *testing.T, interval time.Duration, initial error) *harness {
	t.Helper()
	h := &harness{
		clock:    clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		notifier: NewRecordingNotifier(),
		health:   newSwitchableHealth(),
		logs:     &lockedBuffer{},
		done:     make(chan error, 1),
	}
	h.health.set(initial)
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := New(h.notifier, interval, h.health.check, h.clock, logger)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

// stop cancels Run, checks it returned nil, and checks that no health check ran that
// the test did not account for.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(guard):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if n := len(h.health.calls); n != 0 {
		t.Fatalf("%d health checks ran that the test did not step the clock for", n)
	}
}

// tick advances the fake clock by one interval and waits for the health check it
// triggers.
func (h *harness) tick(t *testing.T) {
	t.Helper()
	h.clock.Step(testInterval)
	h.health.waitCall(t)
}

func (h *harness) waitPings(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := h.notifier.WaitForCount(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func pings(n int) []string {
	return slices.Repeat([]string{"WATCHDOG=1"}, n)
}

func TestPingsAtEachIntervalWhileHealthy(t *testing.T) {
	h := startWatchdog(t, testInterval, nil)
	// The first ping goes out at once, so a slow startup does not eat into the timeout.
	h.health.waitCall(t)
	h.waitPings(t, 1)

	// Just short of an interval nothing may happen; the rest of it makes one tick.
	h.clock.Step(testInterval - time.Millisecond)
	h.clock.Step(time.Millisecond)
	h.health.waitCall(t)
	h.waitPings(t, 2)

	for i := 3; i <= 5; i++ {
		h.tick(t)
		h.waitPings(t, i)
	}
	h.stop(t)
	if got := h.notifier.States(); !slices.Equal(got, pings(5)) {
		t.Fatalf("states = %q, want %q", got, pings(5))
	}
}

func TestPingsStopWhileUnhealthyAndResume(t *testing.T) {
	h := startWatchdog(t, testInterval, nil)
	h.health.waitCall(t)
	h.waitPings(t, 1)

	h.health.set(errors.New("lease renewer: no renewal for 2m0s"))
	h.tick(t)
	h.tick(t)
	h.tick(t)
	if got := h.notifier.States(); !slices.Equal(got, pings(1)) {
		t.Fatalf("after three unhealthy ticks states = %q, want only the first ping", got)
	}

	h.health.set(nil)
	h.tick(t)
	h.waitPings(t, 2)
	h.tick(t)
	h.waitPings(t, 3)
	h.stop(t)

	if got := h.notifier.States(); !slices.Equal(got, pings(3)) {
		t.Fatalf("states = %q, want %q", got, pings(3))
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "health checks failing"); n != 1 {
		t.Errorf("logged the failure %d times over three unhealthy ticks, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "no renewal for 2m0s") {
		t.Errorf("failure log lacks the reason:\n%s", logs)
	}
	if n := strings.Count(logs, "resuming"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, logs)
	}
}

func TestUnhealthyAtStartSendsNoPing(t *testing.T) {
	h := startWatchdog(t, testInterval, errors.New("not registered yet"))
	h.health.waitCall(t)
	h.tick(t)
	h.stop(t)
	if got := h.notifier.States(); len(got) != 0 {
		t.Fatalf("states = %q, want none while unhealthy", got)
	}
}

func TestNotifyFailureIsLoggedOnceAndPingsResume(t *testing.T) {
	h := startWatchdog(t, testInterval, nil)
	h.health.waitCall(t)
	h.waitPings(t, 1)

	h.notifier.FailWith(errors.New("connection refused"))
	h.tick(t)
	h.tick(t)
	h.notifier.FailWith(nil)
	h.tick(t)
	h.waitPings(t, 2)
	h.stop(t)

	logs := h.logs.String()
	if n := strings.Count(logs, "ping failed"); n != 1 {
		t.Errorf("logged the notify failure %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "connection refused") {
		t.Errorf("notify failure log lacks the reason:\n%s", logs)
	}
	if n := strings.Count(logs, "reach systemd again"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, logs)
	}
}

func TestRunReturnsOnCancel(t *testing.T) {
	h := startWatchdog(t, testInterval, nil)
	h.health.waitCall(t)
	h.stop(t)
}

func TestDisabledWatchdogSendsNothing(t *testing.T) {
	h := startWatchdog(t, 0, nil)
	// Stepping far ahead would fire any ticker Run had made by now; with none, no
	// health check runs and stop finds the calls channel empty.
	h.clock.Step(time.Hour)
	h.stop(t)
	if got := h.notifier.States(); len(got) != 0 {
		t.Fatalf("states = %q, want none when disabled", got)
	}
	if h.clock.HasWaiters() {
		t.Fatal("disabled watchdog created a ticker")
	}
}

func TestIntervalFromEnv(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	cases := []struct {
		name  string
		usec  string // "" = unset
		wpid  string // "" = unset
		want  time.Duration
		isErr bool
	}{
		{name: "half of WatchdogSec", usec: "3000000", want: 1500 * time.Millisecond},
		{name: "minimum one second", usec: "1000000", want: time.Second},
		{name: "minimum applies to tiny timeouts", usec: "20000", want: time.Second},
		{name: "long timeout", usec: "180000000", want: 90 * time.Second},
		{name: "unset", want: 0},
		{name: "for this process", usec: "4000000", wpid: pid, want: 2 * time.Second},
		{name: "for another process", usec: "4000000", wpid: "1", want: 0},
		{name: "not a number", usec: "3s", isErr: true},
		{name: "negative", usec: "-5", isErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setOrUnsetenv(t, "WATCHDOG_USEC", tc.usec)
			setOrUnsetenv(t, "WATCHDOG_PID", tc.wpid)
			got, err := IntervalFromEnv()
			if tc.isErr {
				if err == nil {
					t.Fatalf("IntervalFromEnv() = %v, want an error", got)
				}
				if !strings.Contains(err.Error(), "WATCHDOG_USEC=\""+tc.usec+"\"") {
					t.Fatalf("error %q does not quote the bad WATCHDOG_USEC value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("IntervalFromEnv(): %v", err)
			}
			if got != tc.want {
				t.Fatalf("IntervalFromEnv() = %v, want %v", got, tc.want)
			}
		})
	}
}

// setOrUnsetenv sets key for the test, or unsets it when value is empty; t.Setenv
// restores the original either way.
func setOrUnsetenv(t *testing.T, key, value string) {
	t.Helper()
	t.Setenv(key, value)
	if value == "" {
		if err := os.Unsetenv(key); err != nil {
			t.Fatal(err)
		}
	}
}
