package attach

import (
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Auto, BTF, Tracepoints} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	for _, bad := range []string{"", "AUTO", "tp", "kprobe"} {
		if _, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) accepted", bad)
		}
	}
}

func TestRunStatsPerRun(t *testing.T) {
	if got := (RunStats{}).PerRun(); got != 0 {
		t.Errorf("no runs: PerRun() = %v, want 0", got)
	}
	if got := (RunStats{Runs: 4, Runtime: time.Microsecond}).PerRun(); got != 250*time.Nanosecond {
		t.Errorf("PerRun() = %v, want 250ns", got)
	}
}
