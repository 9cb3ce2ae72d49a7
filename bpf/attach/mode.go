package attach

import (
	"fmt"
	"time"
)

// Mode says which program variant to load.
type Mode int

const (
	// Auto loads the tp_btf programs when the kernel has BTF and accepts them, and
	// falls back to the plain tracepoint programs otherwise.
	Auto Mode = iota
	// BTF loads only the tp_btf programs.
	BTF
	// Tracepoints loads only the plain tracepoint programs.
	Tracepoints
)

// String returns "auto", "tp_btf" or "tracepoint", the names ParseMode accepts.
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case BTF:
		return "tp_btf"
	case Tracepoints:
		return "tracepoint"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode turns "auto", "tp_btf" or "tracepoint" into a Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Auto, BTF, Tracepoints} {
		if s == m.String() {
			return m, nil
		}
	}
	return Auto, fmt.Errorf("BPF attach mode %q: want auto, tp_btf or tracepoint", s)
}

// RunStats are a program's run count and total run time, as the kernel accounts them
// while statistics are enabled (EnableStats).
type RunStats struct {
	Runs    uint64
	Runtime time.Duration
}

// PerRun is the mean run time, 0 before the first run.
func (s RunStats) PerRun() time.Duration {
	if s.Runs == 0 {
		return 0
	}
	return s.Runtime / time.Duration(s.Runs)
}
