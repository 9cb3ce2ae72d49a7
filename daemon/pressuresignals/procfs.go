package pressuresignals

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// readPIDs reads the kernel's process ID limits and the number of tasks. The task
// count is the second number of the fourth field of /proc/loadavg ("running/total"),
// which is what kubelet reads: the kernel keeps it, so it costs nothing like a walk of
// /proc would.
func readPIDs(procDir string) (pressure.PIDStats, error) {
	var p pressure.PIDStats
	var errs []error
	var err error
	if p.PIDMax, err = sysinfo.ReadUint(filepath.Join(procDir, "sys/kernel/pid_max")); err != nil {
		errs = append(errs, err)
	}
	if p.ThreadsMax, err = sysinfo.ReadUint(filepath.Join(procDir, "sys/kernel/threads-max")); err != nil {
		errs = append(errs, err)
	}
	if p.PIDMax == 0 && p.ThreadsMax == 0 {
		return pressure.PIDStats{}, errors.Join(errs...)
	}
	file := filepath.Join(procDir, "loadavg")
	b, err := os.ReadFile(file)
	if err != nil {
		return pressure.PIDStats{}, err
	}
	if p.Tasks, err = ParseLoadavgTasks(string(b)); err != nil {
		return pressure.PIDStats{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// ParseLoadavgTasks returns the number of tasks from /proc/loadavg, such as 155 from
// "0.52 0.58 0.59 3/155 3420".
func ParseLoadavgTasks(s string) (uint64, error) {
	fields := strings.Fields(s)
	if len(fields) < 4 {
		return 0, fmt.Errorf("%q: want at least 4 fields, the 4th being running/total tasks", clip(s))
	}
	running, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("field 4 %q: want running/total tasks such as 3/155", clip(fields[3]))
	}
	// The kernel reads the two counts without a common lock, so running may briefly
	// exceed total; only their syntax is checked.
	if _, err := strconv.ParseUint(running, 10, 64); err != nil {
		return 0, fmt.Errorf("field 4 %q: running %q is not an unsigned number", clip(fields[3]), clip(running))
	}
	n, err := strconv.ParseUint(total, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field 4 %q: total %q is not an unsigned number", clip(fields[3]), clip(total))
	}
	return n, nil
}

// clip keeps error messages short when a file holds something unexpected.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
