package cgroup

import (
	"fmt"
	"path/filepath"
	"time"
)

// CPUUsage reads the CPU time the cgroup at cgroupPath ("/" for the node's root) and
// its descendants have used, as kubelet's cpu usage_seconds_total: v2 usage_usec from
// cpu.stat, v1 cpuacct.usage (nanoseconds).
func (h Host) CPUUsage(cgroupPath string) (time.Duration, error) {
	if err := checkPath(cgroupPath); err != nil {
		return 0, err
	}
	if h.Mode == Unified {
		dir := filepath.Join(h.UnifiedDir(), cgroupPath)
		usec, err := readStatKey(dir, "cpu.stat", "usage_usec")
		if err != nil {
			return 0, err
		}
		return time.Duration(usec) * time.Microsecond, nil
	}
	dir, err := h.Dir("cpuacct", cgroupPath)
	if err != nil {
		return 0, err
	}
	ns, err := readUint(dir, "cpuacct.usage")
	if err != nil {
		return 0, fmt.Errorf("cpu usage of %s: %w", cgroupPath, err)
	}
	return time.Duration(ns), nil
}
