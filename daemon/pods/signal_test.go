package pods

import (
	"syscall"
	"testing"
)

func TestParseStopSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{"": 15, "SIGTERM": 15, "term": 15, "9": 9, "SIGQUIT": 3, "SIGRTMIN+3": 37, "RTMAX-1": 63, "SIGWINCH": 28} {
		if got, err := ParseStopSignal(in); err != nil || got != want {
			t.Errorf("ParseStopSignal(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"SIGNOPE", "0", "65", "RTMIN+40", "RTMINx"} {
		if _, err := ParseStopSignal(in); err == nil {
			t.Errorf("ParseStopSignal(%q) succeeded", in)
		}
	}
}
