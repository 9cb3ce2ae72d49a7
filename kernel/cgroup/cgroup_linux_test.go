//go:build linux

package cgroup_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
	"github.com/plinth/plinth/kernel/psi"
)

func TestMain(m *testing.M) {
	cgrouptest.HelperMain()
	os.Exit(m.Run())
}

const mib = 1 << 20

// mountTypes reads /proc/self/mountinfo: mount point → filesystem type. It is an
// independent source for what DetectHost derives from statfs.
func mountTypes(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the type
		// follows the " - " separator; the mount point is the fifth field.
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 1 {
			continue
		}
		out[fields[4]] = after[0]
	}
	return out
}

func TestDetectHostMatchesMountinfo(t *testing.T) {
	kerneltest.Require(t, cgrouptest.Cgroups)
	h, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	mounts := mountTypes(t)
	var want cgroup.Mode
	switch {
	case mounts["/sys/fs/cgroup"] == "cgroup2":
		want = cgroup.Unified
	case mounts["/sys/fs/cgroup/unified"] == "cgroup2":
		want = cgroup.Hybrid
	default:
		want = cgroup.Legacy
	}
	if h.Mode != want {
		t.Errorf("DetectHost mode = %v, mountinfo says %v", h.Mode, want)
	}
	// This process's own cgroups resolve to existing directories.
	pc, err := h.ProcessCgroups(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, ctrl := range []string{"memory", "pids"} {
		p, ok := pc.For(ctrl)
		if !ok {
			t.Errorf("no %s cgroup for this process: %+v", ctrl, pc)
			continue
		}
		dir, err := h.Dir(ctrl, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			t.Errorf("%s cgroup of this process: %v", ctrl, err)
		}
	}
}

func TestMemoryLimitedCgroup(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups)
	var dirs []string
	var pid int
	t.Run("inside", func(t *testing.T) {
		limit := uint64(64 * mib)
		if raceEnabled {
			limit = 1024 * mib
		}
		cg := cgrouptest.New(t, cgrouptest.Options{MemoryLimit: int64(limit), PidsLimit: 64, CPUQuota: 50 * time.Millisecond})
		dirs = cg.Dirs()
		if len(dirs) == 0 {
			t.Fatal("New made no directories")
		}
		cmd := cg.StartHelper(cgrouptest.ModeAlloc, "40")
		pid = cmd.Process.Pid
		host := cg.Host()

		m, err := host.Memory(cg.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("memory of %s: %+v", cg.Path(), m)
		if m.UsageBytes < 30*mib || m.WorkingSetBytes < 30*mib {
			t.Errorf("usage %d / working set %d bytes, want both over 30 MiB with 40 MiB touched", m.UsageBytes, m.WorkingSetBytes)
		}
		if m.LimitBytes != limit || m.UsageBytes > m.LimitBytes {
			t.Errorf("limit %d, usage %d: want the %d-byte limit, usage under it", m.LimitBytes, m.UsageBytes, limit)
		}

		p, err := host.PIDs(cg.Path())
		if err != nil {
			t.Fatal(err)
		}
		// pids counts threads too: a Go helper has several.
		if p.Current < 1 || p.Max != 64 {
			t.Errorf("PIDs = %+v, want at least the helper and max 64", p)
		}

		pc, err := host.ProcessCgroups(pid)
		if err != nil {
			t.Fatal(err)
		}
		for _, ctrl := range []string{"memory", "pids", "cpu", ""} {
			if got, _ := pc.For(ctrl); got != cg.Path() {
				t.Errorf("helper's %q cgroup = %q, want %q", ctrl, got, cg.Path())
			}
		}
		procs, err := cg.Procs()
		if err != nil || !slices.Contains(procs, pid) {
			t.Errorf("Procs = %v, %v; want it to list the helper %d", procs, err, pid)
		}
		if host.Mode == cgroup.Hybrid {
			quota, err := os.ReadFile(filepath.Join(cg.Dir("cpu"), "cpu.cfs_quota_us"))
			if err != nil || strings.TrimSpace(string(quota)) != "50000" {
				t.Errorf("cpu.cfs_quota_us = %q, %v; want 50000", quota, err)
			}
		} else {
			max, err := os.ReadFile(filepath.Join(cg.UnifiedDir(), "cpu.max"))
			if err != nil || strings.TrimSpace(string(max)) != "50000 100000" {
				t.Errorf("cpu.max = %q, %v; want \"50000 100000\"", max, err)
			}
		}

		node, err := host.NodeMemory()
		if err != nil {
			t.Fatal(err)
		}
		if node.UsageBytes < m.UsageBytes || node.LimitBytes != cgroup.Unlimited {
			t.Errorf("NodeMemory = %+v: usage must include the cgroup's %d bytes, limit unlimited", node, m.UsageBytes)
		}
	})
	// The subtest's cleanup has run: the helper is dead and every directory is gone.
	for _, d := range dirs {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists after cleanup (%v)", d, err)
		}
	}
	if pid != 0 {
		if err := processGone(pid); err != nil {
			t.Error(err)
		}
	}
}

func TestCleanupKillsGrandchildren(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups)
	var dirs []string
	var grandchild int
	t.Run("inside", func(t *testing.T) {
		cg := cgrouptest.New(t, cgrouptest.Options{PidsLimit: 16})
		dirs = cg.Dirs()
		// The shell backgrounds a sleeper and prints its pid; the shell itself then
		// waits. Both must be inside, and both must be killed.
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cg.Start(cmd); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if grandchild, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
			t.Fatalf("shell printed %q", line)
		}
		pc, err := cg.Host().ProcessCgroups(grandchild)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := pc.For("pids"); got != cg.Path() {
			t.Errorf("grandchild's pids cgroup = %q, want %q", got, cg.Path())
		}
		p, err := cg.Host().PIDs(cg.Path())
		if err != nil || p.Current < 2 {
			t.Errorf("PIDs = %+v, %v; want the shell and the sleeper", p, err)
		}
	})
	for _, d := range dirs {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists after cleanup (%v)", d, err)
		}
	}
	if grandchild != 0 {
		if err := processGone(grandchild); err != nil {
			t.Error(err)
		}
	}
}

// processGone checks that pid has exited: no such process, or a zombie its new parent
// has not reaped yet.
func processGone(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(b), ')'); err == nil && i >= 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("pid " + strconv.Itoa(pid) + " still running after cleanup: " + string(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPressurePathIsReadable(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups, kerneltest.PSI)
	cg := cgrouptest.New(t, cgrouptest.Options{})
	for _, res := range psi.Resources() {
		if _, err := psi.ReadFile(cg.PressurePath(res)); err != nil {
			t.Errorf("%v pressure of a fresh cgroup: %v", res, err)
		}
	}
}
