package node

import (
	"testing"
	"time"
)

func TestBackoffDelaySchedule(t *testing.T) {
	want := []time.Duration{
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
		7 * time.Second, 7 * time.Second,
	}
	for i, w := range want {
		if got := backoffDelay(i + 1); got != w {
			t.Errorf("backoffDelay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := backoffDelay(1000); got != 7*time.Second {
		t.Errorf("backoffDelay(1000) = %s, want the 7s cap", got)
	}
	if got := backoffDelay(0); got != 0 {
		t.Errorf("backoffDelay(0) = %s, want 0", got)
	}
}
