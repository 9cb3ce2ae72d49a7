//go:build linux

package features_test

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	gnft "github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
	"github.com/plinth/plinth/kernel/features"
)

// TestHostHasWhatPlinthNeeds states what the machines Plinth is tested on must offer,
// and that the probes see it.
func TestHostHasWhatPlinthNeeds(t *testing.T) {
	kerneltest.Require(t, kerneltest.PSI, kerneltest.BTF, cgrouptest.Cgroups)
	r := features.HostSystem().Probe(features.PressureTracepoints()...)
	t.Logf("probe report:\n%s", r)
	for _, res := range []features.Result{r.KernelResult, r.BTF, r.PSI, r.Cgroup, r.RingBuffer} {
		if !res.Available {
			t.Errorf("%s: %s", res.Name, res.Reason)
		}
	}
	if !r.Kernel.AtLeast(5, 13) {
		t.Errorf("kernel %v: plinth's kernel tests assume 5.13 or newer", r.Kernel)
	}
	if r.CgroupMode != cgroup.Hybrid && r.CgroupMode != cgroup.Unified {
		t.Errorf("cgroup mode %v: want hybrid or unified", r.CgroupMode)
	}
}

// mountinfo reads this thread's mount table: mount point → filesystem types mounted
// there (several when stacked).
func mountinfo(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(after) >= 1 {
			out[fields[4]] = append(out[fields[4]], after[0])
		}
	}
	return out
}

func TestProbesMatchIndependentSources(t *testing.T) {
	kerneltest.Require(t, cgrouptest.Cgroups)
	s := features.HostSystem()

	osrelease, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	v, kr := s.Kernel()
	if !kr.Available || v.Release != strings.TrimSpace(string(osrelease)) {
		t.Errorf("Kernel = %+v %+v, /proc/sys/kernel/osrelease = %q", v, kr, osrelease)
	}

	mounts := mountinfo(t)
	has := func(dir, fstype string) bool {
		for _, f := range mounts[dir] {
			if f == fstype {
				return true
			}
		}
		return false
	}
	wantMode := cgroup.Legacy
	if has("/sys/fs/cgroup", "cgroup2") {
		wantMode = cgroup.Unified
	} else if has("/sys/fs/cgroup/unified", "cgroup2") {
		wantMode = cgroup.Hybrid
	}
	if m, r := s.Cgroups(); m != wantMode {
		t.Errorf("Cgroups = %v (%s), mountinfo says %v", m, r.Reason, wantMode)
	}
	tracefsMounted := has("/sys/kernel/tracing", "tracefs") || has("/sys/kernel/debug/tracing", "tracefs")
	if _, r := s.Tracefs(); r.Available != tracefsMounted {
		t.Errorf("Tracefs = %+v, mountinfo says mounted=%v", r, tracefsMounted)
	}
	if r := s.BPFFS(); r.Available != has("/sys/fs/bpf", "bpf") {
		t.Errorf("BPFFS = %+v, mountinfo says mounted=%v", r, has("/sys/fs/bpf", "bpf"))
	}
}

// inPrivateMountNS runs fn on an OS thread in a new, private mount namespace, so the
// mounts it makes vanish with the thread and never reach the host.
func inPrivateMountNS(t *testing.T, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread leaves the host's mount namespace and must die
		// with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- fmt.Errorf("make / private: %w", err)
			return
		}
		done <- fn()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMountTracefsAndBPFFS(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	s := features.HostSystem()
	s.TracefsDir = t.TempDir()
	s.DebugTracingDir = t.TempDir() // empty: only TracefsDir counts here
	s.BPFFSDir = t.TempDir()
	var mountsBefore, mountsAfter map[string][]string
	inPrivateMountNS(t, func() error {
		if _, r := s.Tracefs(); r.Available {
			return fmt.Errorf("tracefs reported at an empty temporary directory: %+v", r)
		}
		if r := s.BPFFS(); r.Available {
			return fmt.Errorf("bpffs reported at an empty temporary directory: %+v", r)
		}
		mountsBefore = mountinfo(t)
		for range 2 { // the second round must find them mounted and do nothing
			if err := s.MountTracefs(); err != nil {
				return err
			}
			if err := s.MountBPFFS(); err != nil {
				return err
			}
		}
		mountsAfter = mountinfo(t)
		if dir, r := s.Tracefs(); dir != s.TracefsDir || !r.Available {
			return fmt.Errorf("after MountTracefs: %q %+v", dir, r)
		}
		if r := s.BPFFS(); !r.Available {
			return fmt.Errorf("after MountBPFFS: %+v", r)
		}
		// Every kernel with tracepoints has sched_process_fork.
		if r := s.Tracepoint(features.Tracepoint{"sched", "sched_process_fork"}); !r.Available {
			return fmt.Errorf("sched:sched_process_fork in the new tracefs: %+v", r)
		}
		return nil
	})
	if len(mountsBefore[s.TracefsDir]) != 0 || len(mountsBefore[s.BPFFSDir]) != 0 {
		t.Errorf("mounted before the test: %v %v", mountsBefore[s.TracefsDir], mountsBefore[s.BPFFSDir])
	}
	if got := mountsAfter[s.TracefsDir]; len(got) != 1 || got[0] != "tracefs" {
		t.Errorf("mounts at the tracefs dir = %v, want one tracefs", got)
	}
	if got := mountsAfter[s.BPFFSDir]; len(got) != 1 || got[0] != "bpf" {
		t.Errorf("mounts at the bpffs dir = %v, want one bpf", got)
	}
	// The host never saw them.
	host := mountinfo(t)
	if len(host[s.TracefsDir]) != 0 || len(host[s.BPFFSDir]) != 0 {
		t.Errorf("mounts leaked to the host namespace: %v %v", host[s.TracefsDir], host[s.BPFFSDir])
	}
}

// TestKernelProbesOnThisHost runs the probes that ask the kernel itself and checks them
// against independent sources where there are any.
func TestKernelProbesOnThisHost(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF, cgrouptest.Cgroups)
	s := features.HostSystem()
	v, kr := s.Kernel()
	if !kr.Available {
		t.Fatal(kr.Reason)
	}
	if r := s.RingBuffer(); r.Available != v.AtLeast(5, 8) {
		t.Errorf("ring buffer %+v on kernel %v", r, v)
	}
	tp, tpBTF := s.BPFPrograms()
	if !tp.Available || !tpBTF.Available {
		t.Errorf("BPF programs on kernel %v with BTF: %+v %+v", v, tp, tpBTF)
	}
	for _, point := range features.PressureTracepoints() {
		if r := s.TracepointBTF(point); !r.Available {
			t.Errorf("%s: %s", r.Name, r.Reason)
		}
	}
	if r := s.TracepointBTF(features.Tracepoint{Group: "plinth", Name: "no_such_tracepoint"}); r.Available {
		t.Errorf("a made-up tracepoint found: %+v", r)
	}

	// Swap areas agree with sysinfo(2).
	devs, err := s.Swap()
	if err != nil {
		t.Fatal(err)
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	if got, want := features.SwapTotal(devs), uint64(si.Totalswap)*uint64(si.Unit); got != want {
		t.Errorf("swap total from /proc/swaps %d, sysinfo(2) says %d", got, want)
	}

	mode, _ := s.Cgroups()
	ctrls, err := s.CgroupControllers(mode)
	if err != nil {
		t.Fatal(err)
	}
	if mode != cgroup.Unified || len(ctrls) > 0 { // a bare v2 root may delegate none
		if !slices.Contains(ctrls, "memory") {
			t.Errorf("controllers in %v mode: %v, no memory", mode, ctrls)
		}
	}
	if pidMax, err := s.Sysctl("kernel.pid_max"); err != nil || pidMax == "" {
		t.Errorf("kernel.pid_max = %q, %v", pidMax, err)
	}
}

// TestNFTablesProbeLeavesNothing checks the nftables probe creates its table in a
// namespace of its own: the host's namespace never has it.
func TestNFTablesProbeLeavesNothing(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NFTables)
	if r := features.HostSystem().NFTablesNetlink(); !r.Available {
		t.Fatalf("nftables: %s", r.Reason)
	}
	c, err := gnft.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Name == "plinth-preflight" {
			t.Errorf("the probe's table %s is in the host's network namespace", tb.Name)
		}
	}
}
