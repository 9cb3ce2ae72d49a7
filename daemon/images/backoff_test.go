package images

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestPullBackoffDoublesToFiveMinutesAndResets(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	b := newPullBackoff(clk)
	if waiting, _, _ := b.inBackoff("img"); waiting {
		t.Fatal("a key that never failed is in back-off")
	}
	var got []time.Duration
	for range 7 {
		got = append(got, b.failed("img", errors.New("boom")))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	waiting, until, lastErr := b.inBackoff("img")
	if !waiting || !until.Equal(clk.Now().Add(5*time.Minute)) || lastErr == nil {
		t.Fatalf("inBackoff = %v until %v (%v), want true until +5m with the last error", waiting, until, lastErr)
	}
	clk.SetTime(clk.Now().Add(5*time.Minute - time.Millisecond))
	if waiting, _, _ := b.inBackoff("img"); !waiting {
		t.Fatal("back-off ended early")
	}
	clk.SetTime(clk.Now().Add(time.Millisecond))
	if waiting, _, _ := b.inBackoff("img"); waiting {
		t.Fatal("back-off still on at its end")
	}
	if waiting, _, _ := b.inBackoff("other"); waiting {
		t.Fatal("back-off leaked to another key")
	}
	b.succeeded("img")
	if d := b.failed("img", nil); d != 10*time.Second {
		t.Fatalf("after a success the first failure waits %v, want 10s", d)
	}
}

func TestPullBackoffForgetsAfterLongQuiet(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	b := newPullBackoff(clk)
	b.failed("img", nil)
	b.failed("img", nil) // 20 s
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	if d := b.failed("img", nil); d != 10*time.Second {
		t.Fatalf("a failure after 11 quiet minutes waits %v, want the initial 10s", d)
	}
}
