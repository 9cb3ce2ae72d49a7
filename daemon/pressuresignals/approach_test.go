package pressuresignals

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/pressure"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func thresholds(t *testing.T, hard map[string]string) []pressure.Threshold {
	t.Helper()
	th, err := pressure.ParseThresholds(pressure.ThresholdSpec{Hard: hard})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// approachHarness drives an approach with a fake clock and counts its wakeups.
type approachHarness struct {
	clock *testingclock.FakeClock
	a     *approach
	woken chan struct{}
}

func newApproachHarness(t *testing.T, hard map[string]string) *approachHarness {
	h := &approachHarness{clock: testingclock.NewFakeClock(t0), woken: make(chan struct{}, 16)}
	h.a = newApproach(thresholds(t, hard), time.Second, h.clock, func() { h.woken <- struct{}{} })
	t.Cleanup(h.a.stop)
	return h
}

func (h *approachHarness) observe(sig pressure.Signal, available, capacity int64) {
	h.a.observe(h.clock.Now(), map[pressure.Signal]pressure.Sample{sig: {Available: available, Capacity: capacity}})
}

// wokenWithin steps the clock by d in small steps and returns when the wakeup came,
// or false.
func (h *approachHarness) wokenWithin(d time.Duration) (time.Duration, bool) {
	for step := time.Duration(0); step <= d; step += 10 * time.Millisecond {
		select {
		case <-h.woken:
			return step, true
		default:
		}
		h.clock.Step(10 * time.Millisecond)
	}
	return 0, false
}

// A pods cgroup filling at 200 MiB/s toward a 100Mi threshold: evaluations once a
// second would see the crossing up to a second late; the approach wakeups close in
// on it and the last one comes within the minimum delay of the crossing.
func TestApproachClosesInOnACrossing(t *testing.T) {
	const rate = 200 * mib // per second
	h := newApproachHarness(t, map[string]string{"allocatableMemory.available": "100Mi"})
	capacity := int64(2148 * mib)
	available := func(at time.Time) int64 { return capacity - int64(at.Sub(t0).Seconds()*rate) }
	sig := pressure.SignalAllocatableMemoryAvailable

	// Periodic observations a second apart, far from the threshold: no wakeup.
	for i := 0; i < 10; i++ {
		h.observe(sig, available(h.clock.Now()), capacity)
		if d, ok := h.wokenWithin(time.Second - 10*time.Millisecond); ok {
			t.Fatalf("woken %s after observation %d with %dMi available, far from the threshold", d, i, available(h.clock.Now())/mib)
		}
		h.clock.SetTime(t0.Add(time.Duration(i+1) * time.Second))
	}
	// At 10 s, 148Mi are left: the crossing comes in 0.24 s, before the next periodic
	// evaluation. Follow the wakeups, observing at each, until one sees it crossed.
	crossAt := t0.Add(time.Duration(float64(capacity-100*mib) / rate * float64(time.Second)))
	var wakeups int
	for {
		now := h.clock.Now()
		h.observe(sig, available(now), capacity)
		if available(now) < 100*mib {
			if late := now.Sub(crossAt); late > approachMinDelay {
				t.Errorf("crossing seen %s after it happened, want within %s", late, approachMinDelay)
			}
			break
		}
		if _, ok := h.wokenWithin(time.Second); !ok {
			t.Fatalf("no wakeup at %s with %dMi available and falling 200Mi/s", now.Sub(t0), available(now)/mib)
		}
		wakeups++
		if wakeups > 20 {
			t.Fatal("more than 20 wakeups closing in on one crossing")
		}
	}
	if wakeups < 2 {
		t.Errorf("%d wakeups before the crossing; want the approach to take a few steps", wakeups)
	}
}

func TestApproachStaysQuiet(t *testing.T) {
	sig := pressure.SignalMemoryAvailable
	for _, tc := range []struct {
		name   string
		series []int64 // available, one observation every 300 ms
	}{
		{"steady near the threshold", []int64{120 * mib, 120 * mib, 120 * mib, 120 * mib}},
		{"rising", []int64{110 * mib, 130 * mib, 150 * mib, 170 * mib}},
		{"falling slowly", []int64{1000 * mib, 990 * mib, 980 * mib, 970 * mib}},
		{"already crossed and falling", []int64{90 * mib, 60 * mib, 30 * mib, 10 * mib}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newApproachHarness(t, map[string]string{"memory.available": "100Mi"})
			for _, v := range tc.series {
				h.observe(sig, v, 8*gib)
				if d, ok := h.wokenWithin(300 * time.Millisecond); ok {
					t.Fatalf("woken after %s with %dMi available", d, v/mib)
				}
			}
		})
	}
}

// Two readings closer than the minimum span give no rate: a burst of page touching
// between two event-driven evaluations must not look like a collapse.
func TestApproachIgnoresReadingsTooCloseTogether(t *testing.T) {
	h := newApproachHarness(t, map[string]string{"memory.available": "100Mi"})
	sig := pressure.SignalMemoryAvailable
	h.observe(sig, 600*mib, 8*gib)
	h.clock.Step(20 * time.Millisecond)
	h.observe(sig, 400*mib, 8*gib) // 10 GiB/s over 20 ms
	if d, ok := h.wokenWithin(150 * time.Millisecond); ok {
		t.Fatalf("woken after %s from two readings 20ms apart", d)
	}
}

func TestApproachStopDisarms(t *testing.T) {
	h := newApproachHarness(t, map[string]string{"memory.available": "100Mi"})
	sig := pressure.SignalMemoryAvailable
	h.observe(sig, 500*mib, 8*gib)
	h.clock.Step(500 * time.Millisecond)
	h.observe(sig, 300*mib, 8*gib) // crossing in 0.5 s: wakeup armed
	h.a.stop()
	if d, ok := h.wokenWithin(time.Second); ok {
		t.Fatalf("woken %s after stop", d)
	}
}
