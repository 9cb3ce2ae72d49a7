package pressuresignals

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/sysinfo"
)

func newTestSignals(t *testing.T, opts Options, deps Deps) *Signals {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	s, err := New(opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func feedByName(t *testing.T, feeds []pressure.Feed, name string) pressure.Feed {
	t.Helper()
	for _, f := range feeds {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no feed %q in %+v", name, feeds)
	return pressure.Feed{}
}

func TestObserveReadsEverySignal(t *testing.T) {
	f := newFixture(t)
	f.podsCgroup("/plinth-pods", 400*mib, 100*mib, itoa(512*mib))
	nodefs := t.TempDir()
	f.setFS(nodefs, sysinfo.Filesystem{CapacityBytes: 100 * gib, AvailableBytes: 30 * gib, Inodes: 1000, InodesFree: 400})
	imagefs := t.TempDir()
	f.setFS(imagefs, sysinfo.Filesystem{CapacityBytes: 50 * gib, AvailableBytes: 5 * gib, Inodes: 500, InodesFree: 10})
	s := newTestSignals(t, Options{NodefsDir: nodefs, ImagefsDir: imagefs, PodsCgroup: "/plinth-pods"}, Deps{Host: f.host()})

	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := pressure.MemoryStats{CapacityBytes: 8 * gib, MemAvailableBytes: 4 * gib, HasMemAvailable: true,
		WorkingSetBytes: 4 * gib, HasWorkingSet: true}
	if obs.Memory == nil || *obs.Memory != want {
		t.Errorf("Memory = %+v, want %+v", obs.Memory, want)
	}
	if a := obs.AllocatableMemory; a == nil || a.AllocatableBytes != 512*mib || a.WorkingSetBytes != 300*mib {
		t.Errorf("AllocatableMemory = %+v, want 512Mi allocatable (the pods cgroup's limit), 300Mi working set", a)
	}
	if n := obs.Nodefs; n == nil || n.AvailableBytes != 30*gib || n.InodesFree != 400 {
		t.Errorf("Nodefs = %+v", n)
	}
	if i := obs.Imagefs; i == nil || i.AvailableBytes != 5*gib || i.Inodes != 500 {
		t.Errorf("Imagefs = %+v", i)
	}
	if p := obs.PIDs; p == nil || *p != (pressure.PIDStats{PIDMax: 32768, ThreadsMax: 192730, Tasks: 155}) {
		t.Errorf("PIDs = %+v, want pid_max 32768, threads-max 192730, 155 tasks", p)
	}
	samples := obs.Samples()
	if got := samples[pressure.SignalAllocatableMemoryAvailable].Available; got != 212*mib {
		t.Errorf("allocatableMemory.available = %d, want 212Mi", got)
	}
	if got := samples[pressure.SignalPIDAvailable].Available; got != 32768-155 {
		t.Errorf("pid.available = %d, want %d", got, 32768-155)
	}
	for _, name := range []string{FeedMeminfo, FeedCgroup, FeedStatfs, FeedPIDs} {
		if fd := feedByName(t, obs.Feeds, name); !fd.Active || fd.Detail != "" {
			t.Errorf("feed %s = %+v, want active", name, fd)
		}
	}
}

func TestObservePodsCgroupWithoutLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allocatable uint64
		want        uint64
	}{
		{"configured allocatable", 6 * gib, 6 * gib},
		{"MemTotal when none configured", 0, 8 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.podsCgroup("/plinth-pods", 1*gib, 0, "")
			s := newTestSignals(t, Options{PodsCgroup: "/plinth-pods", AllocatableMemoryBytes: tc.allocatable}, Deps{Host: f.host()})
			obs, _ := s.Observe(context.Background())
			if a := obs.AllocatableMemory; a == nil || a.AllocatableBytes != tc.want || a.WorkingSetBytes != gib {
				t.Errorf("AllocatableMemory = %+v, want %d allocatable and 1Gi working set", a, tc.want)
			}
		})
	}
}

func TestObserveWithoutPodsCgroupLeavesAllocatableUnobserved(t *testing.T) {
	f := newFixture(t)
	s := newTestSignals(t, Options{}, Deps{Host: f.host()})
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs.AllocatableMemory != nil {
		t.Errorf("AllocatableMemory = %+v without a pods cgroup, want nil", obs.AllocatableMemory)
	}
	if fd := feedByName(t, obs.Feeds, FeedCgroup); !fd.Active {
		t.Errorf("cgroup feed = %+v, want active (the root working set was read)", fd)
	}
}

func TestObserveMissingPartsAreNamed(t *testing.T) {
	f := newFixture(t)
	f.write("proc/meminfo", "MemTotal:       8388608 kB\nMemFree:        0 kB\n") // no MemAvailable
	if err := os.Remove(filepath.Join(f.proc, "loadavg")); err != nil {
		t.Fatal(err)
	}
	f.fsErr = errors.New("input/output error")
	s := newTestSignals(t, Options{NodefsDir: t.TempDir(), ImagefsDir: t.TempDir(), PodsCgroup: "/missing"}, Deps{Host: f.host()})
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe with some parts readable = %v, want no error", err)
	}
	if obs.Memory == nil || obs.Memory.HasMemAvailable || !obs.Memory.HasWorkingSet {
		t.Errorf("Memory = %+v, want the working set but no MemAvailable", obs.Memory)
	}
	if obs.PIDs != nil || obs.Nodefs != nil || obs.Imagefs != nil || obs.AllocatableMemory != nil {
		t.Errorf("unreadable parts observed anyway: %+v", obs)
	}
	for name, want := range map[string]string{
		FeedPIDs:   "loadavg",
		FeedStatfs: "input/output error",
		FeedCgroup: "pods cgroup /missing",
	} {
		fd := feedByName(t, obs.Feeds, name)
		if fd.Active || !strings.Contains(fd.Detail, want) {
			t.Errorf("feed %s = %+v, want inactive naming %q", name, fd, want)
		}
	}
}

func TestObserveNothingReadableIsAnError(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"meminfo", "loadavg", "sys/kernel/pid_max", "sys/kernel/threads-max"} {
		if err := os.Remove(filepath.Join(f.proc, p)); err != nil {
			t.Fatal(err)
		}
	}
	f.fsErr = errors.New("no such device")
	s := newTestSignals(t, Options{NodefsDir: "/n", ImagefsDir: "/i"}, Deps{Host: f.host()})
	_, err := s.Observe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no pressure signal could be read") || !strings.Contains(err.Error(), "no such device") {
		t.Fatalf("Observe = %v, want an error naming every failure", err)
	}
}

// A statfs stuck on a hung filesystem costs one evaluation its context's time, no
// more, and never a second goroutine.
func TestObserveHungStatfs(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	f.setFS(dir, sysinfo.Filesystem{CapacityBytes: gib, AvailableBytes: gib})
	release := make(chan struct{})
	f.fsBlock = release
	s := newTestSignals(t, Options{NodefsDir: dir, ImagefsDir: dir}, Deps{Host: f.host()})
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		obs, err := s.Observe(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		fd := feedByName(t, obs.Feeds, FeedStatfs)
		if obs.Nodefs != nil || fd.Active || !strings.Contains(fd.Detail, "has not returned") {
			t.Fatalf("observation %d during a hung statfs: nodefs %+v, feed %+v", i, obs.Nodefs, fd)
		}
		if obs.Memory == nil || obs.PIDs == nil {
			t.Fatalf("a hung statfs hid the other signals: %+v", obs)
		}
	}
	if got := f.calls(); got != 1 {
		t.Errorf("statfs calls while the first hung = %d, want 1", got)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		obs, _ := s.Observe(context.Background())
		if obs.Nodefs != nil {
			if obs.Imagefs == nil || obs.Imagefs.CapacityBytes != gib {
				t.Errorf("imagefs on the same directory = %+v, want nodefs' figures", obs.Imagefs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nodefs not observed after the hung statfs returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStatfsOfMissingDirectoryUsesItsFilesystem(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	f.setFS(state, sysinfo.Filesystem{CapacityBytes: 10 * gib, AvailableBytes: 2 * gib})
	s := newTestSignals(t, Options{NodefsDir: state, ImagefsDir: filepath.Join(state, "images", "not-yet")}, Deps{Host: f.host()})
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs.Imagefs == nil || obs.Imagefs.CapacityBytes != 10*gib {
		t.Fatalf("imagefs of a directory not created yet = %+v, want its parent's filesystem", obs.Imagefs)
	}
}
