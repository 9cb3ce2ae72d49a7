package psi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestTriggerSpec(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kind          StallKind
		stall, window time.Duration
		want          string   // spec, when valid
		errHas        []string // else substrings of the error
	}{
		{name: "some 50ms per 500ms", kind: Some, stall: 50 * time.Millisecond, window: 500 * time.Millisecond, want: "some 50000 500000"},
		{name: "full 1s per 10s", kind: Full, stall: time.Second, window: 10 * time.Second, want: "full 1000000 10000000"},
		{name: "stall equal to window", kind: Some, stall: time.Second, window: time.Second, want: "some 1000000 1000000"},
		{name: "window too short", kind: Some, stall: time.Millisecond, window: 499 * time.Millisecond, errHas: []string{"window 499ms", "500ms to 10s"}},
		{name: "window too long", kind: Some, stall: time.Millisecond, window: 11 * time.Second, errHas: []string{"window 11s"}},
		{name: "stall over window", kind: Full, stall: 2 * time.Second, window: time.Second, errHas: []string{"stall threshold 2s", "at most the window 1s"}},
		{name: "zero stall", kind: Some, stall: 0, window: time.Second, errHas: []string{"stall threshold 0s"}},
		{name: "bad kind", kind: 7, stall: time.Millisecond, window: time.Second, errHas: []string{"StallKind(7)"}},
		{name: "sub-microsecond stall", kind: Some, stall: 1500 * time.Nanosecond, window: time.Second, errHas: []string{"whole number of microseconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TriggerSpec(tc.kind, tc.stall, tc.window)
			if tc.errHas == nil {
				if err != nil || got != tc.want {
					t.Fatalf("TriggerSpec = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("TriggerSpec = %q, want an error", got)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestNewTriggerValidatesBeforeOpening(t *testing.T) {
	// The path does not exist: a validation error proves the arguments were checked first.
	_, err := NewTrigger("/nonexistent/cpu.pressure", Some, time.Second, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "window 100ms") || !strings.Contains(err.Error(), "/nonexistent/cpu.pressure") {
		t.Fatalf("NewTrigger error = %v, want the window named with the path", err)
	}
}

func TestFakeTriggerEvents(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	f := NewFakeTrigger(clk)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := f.Events(ctx)

	f.Fire()
	select {
	case got := <-events:
		if !got.Equal(clk.Now()) {
			t.Errorf("event time = %v, want the clock's %v", got, clk.Now())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event after Fire")
	}

	cancel()
	select {
	case _, ok := <-events:
		if ok {
			// A late event may be pending; the channel must still close after it.
			if _, ok := <-events; ok {
				t.Fatal("events channel still open after cancel")
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("events channel not closed after cancel")
	}
	if err := f.Err(); err != nil {
		t.Errorf("Err after cancel = %v, want nil", err)
	}
}

func TestFakeTriggerFailureEndsEvents(t *testing.T) {
	f := NewFakeTrigger(clocktesting.NewFakePassiveClock(time.Now()))
	events := f.Events(t.Context())
	boom := errors.New("cgroup removed")
	f.Fail(boom)
	for range events {
	}
	if !errors.Is(f.Err(), boom) {
		t.Errorf("Err = %v, want %v", f.Err(), boom)
	}
}

func TestFakeTriggerCollapsesFirings(t *testing.T) {
	f := NewFakeTrigger(clocktesting.NewFakePassiveClock(time.Now()))
	f.Fire()
	f.Fire()
	if err := f.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := f.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Wait = %v, want the deadline: two firings collapse into one", err)
	}
}
