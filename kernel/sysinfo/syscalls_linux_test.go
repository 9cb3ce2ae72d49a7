package sysinfo_test

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// TestRealHost reads the running system and checks the values against independent
// sources: the sysinfo(2) system call, uname(1)'s source /proc/sys/kernel/osrelease,
// and statfs numbers that must be internally consistent.
func TestRealHost(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	h := sysinfo.Host{}

	m, err := h.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	fromSyscall := uint64(si.Totalram) * uint64(si.Unit)
	if m.MemTotal == 0 {
		t.Fatal("MemTotal is 0")
	}
	diff := float64(m.MemTotal) - float64(fromSyscall)
	if diff < 0 {
		diff = -diff
	}
	if diff > 0.01*float64(fromSyscall) {
		t.Errorf("MemTotal %d differs from sysinfo(2) totalram %d by more than 1%%", m.MemTotal, fromSyscall)
	}
	if m.MemAvailable == 0 || m.MemAvailable > m.MemTotal {
		t.Errorf("MemAvailable %d not in (0, MemTotal %d]", m.MemAvailable, m.MemTotal)
	}

	rel, err := sysinfo.KernelRelease()
	if err != nil {
		t.Fatal(err)
	}
	osrelease, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(osrelease)); rel != want {
		t.Errorf("KernelRelease = %q, /proc/sys/kernel/osrelease says %q", rel, want)
	}

	if n := sysinfo.CPUCount(); n < 1 || n > runtime.NumCPU() {
		t.Errorf("CPUCount = %d, want 1..%d", n, runtime.NumCPU())
	}

	boot, err := h.BootID()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(boot) {
		t.Errorf("BootID %q is not a UUID", boot)
	}
	if again, _ := h.BootID(); again != boot {
		t.Errorf("BootID changed between reads: %q then %q", boot, again)
	}

	fs, err := sysinfo.FilesystemStats(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fs.CapacityBytes == 0 || fs.AvailableBytes > fs.CapacityBytes || fs.InodesFree > fs.Inodes {
		t.Errorf("FilesystemStats = %+v, want capacity > 0, available <= capacity, free inodes <= inodes", fs)
	}
}

func TestFilesystemStatsMissingPath(t *testing.T) {
	_, err := sysinfo.FilesystemStats("/nonexistent/plinth-sysinfo-test")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/plinth-sysinfo-test") {
		t.Errorf("error = %v, want one naming the path", err)
	}
}
