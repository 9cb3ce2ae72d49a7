//go:build linux

package podcgroup

import (
	"os"
	"strings"
	"testing"

	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

func TestEnsureAndRemove(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups)
	m := Manager{Parent: podtest.CgroupParent(t)}
	host, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	const uid = "0000-1111"
	if err := m.Ensure(uid, Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, PidsLimit: 50}); err != nil {
		t.Fatal(err)
	}
	p, _ := Path(m.Parent, uid)
	if mem, err := host.Memory(p); err != nil || mem.LimitBytes != 64<<20 {
		t.Errorf("memory limit = %d, %v; want 64 MiB", mem.LimitBytes, err)
	}
	if pids, err := host.PIDs(p); err != nil || pids.Max != 50 {
		t.Errorf("pids.max = %d, %v; want 50", pids.Max, err)
	}
	// Updating lifts the memory limit.
	if err := m.Ensure(uid, Resources{CPUShares: 2, PidsLimit: 50}); err != nil {
		t.Fatal(err)
	}
	if mem, err := host.Memory(p); err != nil || mem.LimitBytes != cgroup.Unlimited {
		t.Errorf("memory limit after update = %d, %v; want unlimited", mem.LimitBytes, err)
	}
	if err := m.Remove(uid); err != nil {
		t.Fatal(err)
	}
	dir, _ := host.Dir("memory", p)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Remove: %v", dir, err)
	}
	if err := m.Remove(uid); err != nil && !strings.Contains(err.Error(), "no such") {
		t.Errorf("second Remove: %v", err)
	}
}
