package cgroup

import (
	"path/filepath"
	"testing"
)

func TestOOMKills(t *testing.T) {
	hybrid := Host{Mode: Hybrid, Root: filepath.Join("testdata", "hybrid")}
	if n, err := hybrid.OOMKills("/pod1"); err != nil || n != 2 {
		t.Errorf("hybrid OOMKills = %d, %v; want 2 from memory.oom_control", n, err)
	}
	unified := Host{Mode: Unified, Root: filepath.Join("testdata", "unified")}
	if n, err := unified.OOMKills("/pod1"); err != nil || n != 1 {
		t.Errorf("unified OOMKills = %d, %v; want 1 from memory.events", n, err)
	}
	if _, err := hybrid.OOMKills("/missing"); err == nil {
		t.Error("OOMKills of a missing cgroup succeeded")
	}
}
