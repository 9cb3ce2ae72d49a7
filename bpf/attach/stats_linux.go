package attach

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// EnableStats turns on the kernel's accounting of every BPF program's run count and
// run time (Linux 5.8 on), until the returned Closer is closed. It adds two clock
// reads to each program run, so turn it on to measure, not for good.
func EnableStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		return nil, fmt.Errorf("enable BPF run time statistics: %w", err)
	}
	return c, nil
}

// Stats returns the run statistics of each program of the set, by program name.
func (s *Set) Stats() (map[string]RunStats, error) {
	out := make(map[string]RunStats, len(s.Collection.Programs))
	for name, p := range s.Collection.Programs {
		st, err := p.Stats()
		if err != nil {
			return nil, fmt.Errorf("BPF program %s: %w", name, err)
		}
		out[name] = RunStats{Runs: st.RunCount, Runtime: st.Runtime}
	}
	return out, nil
}
