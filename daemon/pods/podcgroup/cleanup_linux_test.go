//go:build linux

package podcgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// Cleanup removes the pod cgroups, container cgroups below them included, in every
// hierarchy, keeps one that holds a process (naming it), and removes the parent once
// nothing is left.
func TestCleanupRemovesEmptyPodCgroupsEverywhere(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups)
	parent := podtest.CgroupParent(t)
	m := Manager{Parent: parent}
	host, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"idle", "busy"} {
		if err := m.Ensure(uid, Resources{CPUShares: 2, PidsLimit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	// A container's cgroup below the idle pod's, as runc makes them.
	idleMem, err := host.Dir("memory", parent+"/podidle")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(idleMem, "idle-app-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A process in the busy pod's memory cgroup.
	busyMem, err := host.Dir("memory", parent+"/podbusy")
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = sleeper.Process.Kill()
			_ = sleeper.Wait()
		}
	}
	t.Cleanup(stop)
	if err := os.WriteFile(filepath.Join(busyMem, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	removed, err := Cleanup(host, parent)
	if err == nil || !strings.Contains(err.Error(), busyMem) {
		t.Errorf("Cleanup with a process in %s: err = %v, want it named", busyMem, err)
	}
	for _, dir := range []string{idleMem, filepath.Join(idleMem, "idle-app-0")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s survived Cleanup (%v); removed %v", dir, err, removed)
		}
	}
	if _, err := os.Stat(busyMem); err != nil {
		t.Errorf("the cgroup holding a process was removed: %v", err)
	}
	if host.Mode != cgroup.Unified { // one hierarchy per controller: the pids one is empty
		if busyPids, err := host.Dir("pids", parent+"/podbusy"); err != nil {
			t.Fatal(err)
		} else if _, err := os.Stat(busyPids); !os.IsNotExist(err) {
			t.Errorf("%s (no process in that hierarchy) survived Cleanup: %v", busyPids, err)
		}
	}

	stop()
	if _, err := Cleanup(host, parent); err != nil {
		t.Fatalf("Cleanup once the process is gone: %v", err)
	}
	for _, ctrl := range []string{"memory", "pids", "cpu"} {
		dir, err := host.Dir(ctrl, parent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("parent %s survived the second Cleanup: %v", dir, err)
		}
	}
	if _, err := Cleanup(host, "plinth"); err == nil {
		t.Error("Cleanup accepted a relative parent")
	}
}
