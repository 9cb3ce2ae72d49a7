//go:build linux

package cgroup_test

import (
	"testing"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// The node's CPU time only grows, and is at least this process's own CPU time.
func TestNodeCPUUsage(t *testing.T) {
	kerneltest.Require(t, cgrouptest.Cgroups)
	h, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	first, err := h.CPUUsage("/")
	if err != nil {
		t.Fatalf("CPUUsage(/): %v", err)
	}
	x := 0
	for i := range 5_000_000 {
		x += i
	}
	_ = x
	second, err := h.CPUUsage("/")
	if err != nil {
		t.Fatal(err)
	}
	if first <= 0 || second < first {
		t.Errorf("node CPU time %v then %v: want positive and not decreasing", first, second)
	}
}
