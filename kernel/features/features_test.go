package features

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/plinth/plinth/kernel/cgroup"
)

func TestParseKernelRelease(t *testing.T) {
	for _, tc := range []struct {
		in                  string
		major, minor, patch int
	}{
		{"6.18.44-fc-v769", 6, 18, 44},
		{"5.15.0-91-generic", 5, 15, 0},
		{"6.1.0-13-amd64", 6, 1, 0},
		{"6.8.0-rc3", 6, 8, 0},
		{"4.18.0-372.9.1.el8.x86_64", 4, 18, 0},
		{"6.1", 6, 1, 0},
		{"5.10.0+", 5, 10, 0},
		{"6.12.", 6, 12, 0},
	} {
		v, err := ParseKernelRelease(tc.in)
		if err != nil {
			t.Errorf("ParseKernelRelease(%q): %v", tc.in, err)
			continue
		}
		if v.Major != tc.major || v.Minor != tc.minor || v.Patch != tc.patch || v.Release != tc.in {
			t.Errorf("ParseKernelRelease(%q) = %+v", tc.in, v)
		}
	}
	for _, bad := range []string{"", "linux", "6", "6-generic", "6.x.1", "1.2.3.4", "99999999999.1"} {
		if _, err := ParseKernelRelease(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("ParseKernelRelease(%q) error = %v, want one quoting the release", bad, err)
		}
	}
}

func TestAtLeast(t *testing.T) {
	v := KernelVersion{Major: 5, Minor: 13, Patch: 2}
	for _, tc := range []struct {
		major, minor int
		want         bool
	}{{5, 13, true}, {5, 8, true}, {4, 20, true}, {5, 14, false}, {6, 0, false}} {
		if got := v.AtLeast(tc.major, tc.minor); got != tc.want {
			t.Errorf("%v.AtLeast(%d, %d) = %v", v, tc.major, tc.minor, got)
		}
	}
}

func FuzzParseKernelRelease(f *testing.F) {
	for _, s := range []string{"6.18.44-fc-v769", "5.15.0-91-generic", "6.1", "4.18.0-372.9.1.el8.x86_64", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseKernelRelease(in)
		if err != nil {
			return
		}
		if v.Release != in || v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("ParseKernelRelease(%q) = %+v", in, v)
		}
		// The numbers survive a round trip through their canonical form.
		back, err := ParseKernelRelease(v.String())
		if err != nil || back.Major != v.Major || back.Minor != v.Minor || back.Patch != v.Patch {
			t.Fatalf("round trip of %q: %+v then %+v, %v", in, v, back, err)
		}
	})
}

// fakeHost is a System over a temporary tree, with statfs answering from a table.
type fakeHost struct {
	*System
	root   string
	magics map[string]int64
	mounts []string
}

func newFakeHost(t *testing.T, release string) *fakeHost {
	t.Helper()
	root := t.TempDir()
	h := &fakeHost{root: root, magics: map[string]int64{}}
	h.System = &System{
		ProcDir:         filepath.Join(root, "proc"),
		SysDir:          filepath.Join(root, "sys"),
		BootDir:         filepath.Join(root, "boot"),
		CgroupRoot:      filepath.Join(root, "sys/fs/cgroup"),
		TracefsDir:      filepath.Join(root, "sys/kernel/tracing"),
		DebugTracingDir: filepath.Join(root, "sys/kernel/debug/tracing"),
		BPFFSDir:        filepath.Join(root, "sys/fs/bpf"),
		Statfs: func(p string) (int64, error) {
			if m, ok := h.magics[p]; ok {
				return m, nil
			}
			return 0, &fs.PathError{Op: "statfs", Path: p, Err: fs.ErrNotExist}
		},
		ReadFile: os.ReadFile,
		Release:  func() (string, error) { return release, nil },
		Mount: func(source, target, fstype string, flags uintptr, data string) error {
			h.mounts = append(h.mounts, fstype+" on "+target)
			return nil
		},
	}
	for _, d := range []string{"sys/kernel/tracing", "sys/fs/bpf"} {
		h.mkdir(t, d)
	}
	return h
}

func (h *fakeHost) mkdir(t *testing.T, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(h.root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (h *fakeHost) write(t *testing.T, rel, content string) {
	t.Helper()
	h.mkdir(t, filepath.Dir(rel))
	if err := os.WriteFile(filepath.Join(h.root, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const memoryPressure = "some avg10=1.50 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=5\n"

func TestPSIProbe(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "CONFIG_PSI") {
		t.Errorf("no /proc/pressure: %+v", r)
	}
	h.write(t, "proc/pressure/memory", memoryPressure)
	if r := h.PSI(); !r.Available || r.Name != "psi" || !strings.Contains(r.Reason, "some avg10=1.50 full avg10=0.25") {
		t.Errorf("enabled: %+v", r)
	}
	// psi=0 on a kernel with CONFIG_PSI: the file is there but reading it fails.
	read := h.ReadFile
	h.ReadFile = func(p string) ([]byte, error) {
		if strings.Contains(p, "pressure") {
			return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EOPNOTSUPP}
		}
		return read(p)
	}
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "disabled at boot") || !strings.Contains(r.Reason, "add psi=1") {
		t.Errorf("disabled at boot, cause unknown: %+v", r)
	}
	h.write(t, "proc/cmdline", "console=ttyS0 psi=0 quiet -- psi=1\n")
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "psi=0 on the kernel command line") {
		t.Errorf("psi=0: %+v", r)
	}
	h.ReadFile = func(string) ([]byte, error) { return []byte("garbage\n"), nil }
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "pressure/memory") {
		t.Errorf("unparsable: %+v", r)
	}
}

func gzipped(t *testing.T, text string) string {
	t.Helper()
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Newer kernels with PSI off at boot have no /proc/pressure at all: the command line
// and the build configuration tell why.
func TestPSIOffReasons(t *testing.T) {
	h := newFakeHost(t, "6.12.0-1-amd64")
	h.write(t, "proc/cmdline", "root=/dev/vda1 ro\n")
	h.write(t, "boot/config-6.12.0-1-amd64", "CONFIG_PSI=y\nCONFIG_PSI_DEFAULT_DISABLED=y\n")
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "CONFIG_PSI_DEFAULT_DISABLED") || !strings.Contains(r.Reason, "boot/config-6.12.0-1-amd64") || !strings.Contains(r.Reason, "add psi=1") {
		t.Errorf("default disabled (from /boot): %+v", r)
	}
	// /proc/config.gz wins over /boot.
	h.write(t, "proc/config.gz", gzipped(t, "# CONFIG_PSI is not set\nCONFIG_BPF=y\n"))
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "built without CONFIG_PSI (") || !strings.Contains(r.Reason, "config.gz") {
		t.Errorf("no CONFIG_PSI (from config.gz): %+v", r)
	}
	h.Release = func() (string, error) { return "4.19.0-27-amd64", nil }
	if r := h.PSI(); r.Available || !strings.Contains(r.Reason, "predates PSI (4.20)") {
		t.Errorf("4.19: %+v", r)
	}
}

func TestParseCmdline(t *testing.T) {
	got := ParseCmdline(`BOOT_IMAGE=/vmlinuz root=UUID=ab quiet psi=1 dyndbg="file a.c +p" psi=0x -- psi=0 init-arg` + "\n")
	want := map[string]string{"BOOT_IMAGE": "/vmlinuz", "root": "UUID=ab", "quiet": "", "psi": "0x", "dyndbg": "file a.c +p"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseCmdline = %v, want %v", got, want)
	}
}

func FuzzParseCmdline(f *testing.F) {
	for _, s := range []string{"psi=1 quiet", `a="b c" -- d`, `"`, "x==y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		params := ParseCmdline(in)
		if strings.Contains(in, `"`) {
			// Quotes may group spaces even into a name, as the kernel's parser does;
			// with balanced quotes a parameter appended after them is read as such.
			if strings.Count(in, `"`)%2 == 0 && !slices.Contains(strings.Fields(in), "--") {
				if got := ParseCmdline(in + " psi=0")["psi"]; got != "0" {
					t.Fatalf("ParseCmdline(%q + \" psi=0\")[psi] = %q", in, got)
				}
			}
			return
		}
		for k := range params {
			if k == "--" || strings.ContainsAny(k, " \t\n") {
				t.Fatalf("ParseCmdline(%q) has parameter %q", in, k)
			}
		}
	})
}

func TestParseSwaps(t *testing.T) {
	devs, err := ParseSwaps("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
		"/dev/vda2                               partition\t2097148\t\t0\t\t-2\n" +
		"/swap\\040file                         file\t\t1024\t\t512\t\t5\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0] != (SwapDevice{"/dev/vda2", "partition", 2097148 * 1024, 0, -2}) ||
		devs[1] != (SwapDevice{`/swap\040file`, "file", 1 << 20, 512 << 10, 5}) {
		t.Errorf("ParseSwaps = %+v", devs)
	}
	if got := SwapTotal(devs); got != 2097148*1024+1<<20 {
		t.Errorf("SwapTotal = %d", got)
	}
	if devs, err := ParseSwaps("Filename\tType\tSize\tUsed\tPriority\n"); err != nil || len(devs) != 0 {
		t.Errorf("swap off: %v %v", devs, err)
	}
	for _, bad := range []string{"/dev/x partition 1 0\n", "/dev/x partition -1 0 0\n", "/dev/x p 1 0 high\n", "/dev/x p 99999999999999999999 0 0\n"} {
		if _, err := ParseSwaps(bad); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseSwaps(%q) error = %v, want one naming line 1", bad, err)
		}
	}
}

func FuzzParseSwaps(f *testing.F) {
	for _, s := range []string{"Filename Type Size Used Priority\n/dev/sda2 partition 100 1 -2\n", "/f file 18446744073709551615 0 0\n", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		devs, err := ParseSwaps(in)
		if err != nil {
			return
		}
		for _, d := range devs {
			if d.SizeBytes%1024 != 0 || d.Filename == "" {
				t.Fatalf("ParseSwaps(%q): %+v", in, d)
			}
		}
	})
}

func TestHostFacts(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	h.write(t, "proc/sys/vm/overcommit_memory", "1\n")
	if v, err := h.Sysctl("vm.overcommit_memory"); err != nil || v != "1" {
		t.Errorf("Sysctl = %q, %v", v, err)
	}
	if _, err := h.Sysctl("vm.panic_on_oom"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "vm.panic_on_oom") {
		t.Errorf("missing sysctl: %v", err)
	}
	if _, err := h.Sysctl("../../etc/passwd"); err == nil {
		t.Error("Sysctl accepted a path")
	}
	if r := h.UserNamespaces(); r.Available || !strings.Contains(r.Reason, "CONFIG_USER_NS") {
		t.Errorf("no userns: %+v", r)
	}
	h.write(t, "proc/sys/user/max_user_namespaces", "0\n")
	if r := h.UserNamespaces(); r.Available {
		t.Errorf("max 0: %+v", r)
	}
	h.write(t, "proc/sys/user/max_user_namespaces", "63000\n")
	if r := h.UserNamespaces(); !r.Available {
		t.Errorf("userns: %+v", r)
	}
	if r := h.Conntrack(); r.Available || !strings.Contains(r.Reason, "nf_conntrack") {
		t.Errorf("no conntrack: %+v", r)
	}

	// v1 controllers from /proc/cgroups, v2 from cgroup.controllers.
	h.write(t, "proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t3\t1\t1\nmemory\t5\t90\t1\npids\t0\t1\t0\n")
	if got, err := h.CgroupControllers(cgroup.Hybrid); err != nil || fmt.Sprint(got) != "[cpu memory]" {
		t.Errorf("v1 controllers = %v, %v", got, err)
	}
	h.write(t, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
	if got, err := h.CgroupControllers(cgroup.Unified); err != nil || fmt.Sprint(got) != "[cpuset cpu io memory pids]" {
		t.Errorf("v2 controllers = %v, %v", got, err)
	}

	// Swap accounting: v2 looks for memory.swap.max below the root, v1 for memsw.
	if r := h.SwapAccounting(cgroup.Unified); r.Available {
		t.Errorf("v2 without memory.swap.max: %+v", r)
	}
	h.write(t, "sys/fs/cgroup/system.slice/memory.swap.max", "max\n")
	if r := h.SwapAccounting(cgroup.Unified); !r.Available {
		t.Errorf("v2 swap accounting: %+v", r)
	}
	if r := h.SwapAccounting(cgroup.Hybrid); r.Available || !strings.Contains(r.Reason, "swapaccount=1") {
		t.Errorf("v1 without memsw: %+v", r)
	}
	h.write(t, "sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "9223372036854771712\n")
	if r := h.SwapAccounting(cgroup.Hybrid); !r.Available {
		t.Errorf("v1 swap accounting: %+v", r)
	}
}

func TestKernelProbesNotOnFixtures(t *testing.T) {
	s := NewSystem(t.TempDir())
	tp, btf := s.BPFPrograms()
	for _, r := range []Result{s.NFTablesNetlink(), tp, btf, s.TracepointBTF(Tracepoint{"oom", "mark_victim"})} {
		if r.Available || !strings.Contains(r.Reason, "not probed") {
			t.Errorf("%+v on a fixture tree", r)
		}
	}
	if _, kr := s.Kernel(); kr.Available {
		t.Errorf("kernel without osrelease: %+v", kr)
	}
	s.BPFMapType = func(ebpf.MapType) error { return errors.New("operation not permitted") }
	if r := s.RingBuffer(); r.Available || !strings.Contains(r.Reason, "operation not permitted") {
		t.Errorf("ring buffer refused: %+v", r)
	}
	s.BPFProgramType = func(ebpf.ProgramType) error { return nil }
	s.LoadTpBTF = func(string) error { return errors.New("invalid argument") }
	s.NFTables = func() error { return errors.New("protocol not supported") }
	tp, btf = s.BPFPrograms()
	if !tp.Available || btf.Available || !strings.Contains(btf.Reason, "invalid argument") {
		t.Errorf("programs: %+v %+v", tp, btf)
	}
	if r := s.NFTablesNetlink(); r.Available || r.Reason != "protocol not supported" {
		t.Errorf("nftables: %+v", r)
	}
}

func TestSeccompProbe(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	if r := h.Seccomp(); r.Available || !strings.Contains(r.Reason, "CONFIG_SECCOMP_FILTER") {
		t.Errorf("no actions_avail: %+v", r)
	}
	h.write(t, "proc/sys/kernel/seccomp/actions_avail", "kill_process kill_thread trap errno user_notif trace log allow\n")
	if r := h.Seccomp(); !r.Available || r.Name != "seccomp" || !strings.Contains(r.Reason, "user_notif") {
		t.Errorf("present: %+v", r)
	}
	h.write(t, "proc/sys/kernel/seccomp/actions_avail", "kill_thread trap allow\n")
	if r := h.Seccomp(); r.Available || !strings.Contains(r.Reason, `lacks the seccomp action "errno"`) {
		t.Errorf("without errno: %+v", r)
	}
}

func TestBTFProbe(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	if r := h.BTF(); r.Available || !strings.Contains(r.Reason, "CONFIG_DEBUG_INFO_BTF") {
		t.Errorf("no BTF: %+v", r)
	}
	h.write(t, "sys/kernel/btf/vmlinux", "")
	if r := h.BTF(); r.Available || !strings.Contains(r.Reason, "empty") {
		t.Errorf("empty BTF: %+v", r)
	}
	h.write(t, "sys/kernel/btf/vmlinux", strings.Repeat("x", 3<<20))
	if r := h.BTF(); !r.Available || !strings.Contains(r.Reason, "3.0 MiB") {
		t.Errorf("BTF: %+v", r)
	}
}

func TestCgroupProbe(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	if _, r := h.Cgroups(); r.Available {
		t.Errorf("nothing mounted: %+v", r)
	}
	h.magics[h.CgroupRoot] = cgroup.TmpfsMagic
	if m, r := h.Cgroups(); m != cgroup.Legacy || !r.Available || !strings.Contains(r.Reason, "no per-cgroup PSI") {
		t.Errorf("legacy: %v %+v", m, r)
	}
	h.magics[filepath.Join(h.CgroupRoot, "unified")] = cgroup.Cgroup2SuperMagic
	if m, r := h.Cgroups(); m != cgroup.Hybrid || !strings.HasPrefix(r.Reason, "hybrid") {
		t.Errorf("hybrid: %v %+v", m, r)
	}
	h.magics[h.CgroupRoot] = cgroup.Cgroup2SuperMagic
	if m, r := h.Cgroups(); m != cgroup.Unified || !strings.HasPrefix(r.Reason, "unified") {
		t.Errorf("unified: %v %+v", m, r)
	}
}

func TestTracefsAndTracepoints(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	fork := Tracepoint{"sched", "sched_process_fork"}
	h.write(t, "sys/kernel/tracing/events/sched/sched_process_fork/id", "312\n")

	// The directory exists but nothing is mounted on it (statfs says sysfs).
	h.magics[h.TracefsDir] = 0x62656572
	if dir, r := h.Tracefs(); dir != "" || r.Available || !strings.Contains(r.Reason, "tracefs not mounted") {
		t.Errorf("unmounted: %q %+v", dir, r)
	}
	if r := h.Tracepoint(fork); r.Available || !strings.Contains(r.Reason, "tracefs not mounted") {
		t.Errorf("tracepoint without tracefs: %+v", r)
	}

	h.magics[h.TracefsDir] = TracefsMagic
	if r := h.Tracepoint(fork); !r.Available || r.Name != "tracepoint sched:sched_process_fork" || r.Reason != "id 312" {
		t.Errorf("tracepoint: %+v", r)
	}
	if r := h.Tracepoint(Tracepoint{"oom", "mark_victim"}); r.Available || !strings.Contains(r.Reason, "no oom:mark_victim in") {
		t.Errorf("missing tracepoint: %+v", r)
	}

	// Only the debugfs one is mounted.
	delete(h.magics, h.TracefsDir)
	h.magics[h.DebugTracingDir] = TracefsMagic
	if dir, r := h.Tracefs(); dir != h.DebugTracingDir || !r.Available {
		t.Errorf("debugfs tracing: %q %+v", dir, r)
	}

	// A kernel without tracefs has no mount point either.
	delete(h.magics, h.DebugTracingDir)
	if err := os.RemoveAll(h.TracefsDir); err != nil {
		t.Fatal(err)
	}
	if _, r := h.Tracefs(); !strings.Contains(r.Reason, "CONFIG_TRACING") {
		t.Errorf("no tracefs at all: %+v", r)
	}
}

func TestParseTracepoint(t *testing.T) {
	tp, err := ParseTracepoint("oom:mark_victim")
	if err != nil || tp != (Tracepoint{"oom", "mark_victim"}) || tp.String() != "oom:mark_victim" {
		t.Errorf("ParseTracepoint = %+v, %v", tp, err)
	}
	for _, bad := range []string{"", "oom", ":x", "x:", "a:b:c", "../x:y", "a b:c", "..:x"} {
		if _, err := ParseTracepoint(bad); err == nil {
			t.Errorf("ParseTracepoint(%q) succeeded", bad)
		}
	}
}

func TestMounts(t *testing.T) {
	h := newFakeHost(t, "6.1.0")
	h.magics[h.TracefsDir] = 0x62656572 // sysfs: not mounted
	h.magics[h.BPFFSDir] = BPFFSMagic   // already mounted
	if err := h.MountTracefs(); err != nil {
		t.Fatal(err)
	}
	if err := h.MountBPFFS(); err != nil {
		t.Fatal(err)
	}
	want := []string{"tracefs on " + h.TracefsDir}
	if fmt.Sprint(h.mounts) != fmt.Sprint(want) {
		t.Errorf("mounts = %q, want %q (bpffs was mounted already)", h.mounts, want)
	}
	if r := h.BPFFS(); !r.Available {
		t.Errorf("BPFFS: %+v", r)
	}
	h.Mount = func(string, string, string, uintptr, string) error { return syscall.EPERM }
	if err := h.MountTracefs(); !errors.Is(err, syscall.EPERM) || !strings.Contains(err.Error(), h.TracefsDir) {
		t.Errorf("failing mount: %v", err)
	}
	delete(h.magics, h.BPFFSDir)
	if r := h.BPFFS(); r.Available || !strings.Contains(r.Reason, "MountBPFFS") {
		t.Errorf("BPFFS unmounted: %+v", r)
	}
}

func TestReportOldKernel(t *testing.T) {
	h := newFakeHost(t, "5.4.0-91-generic")
	h.magics[h.CgroupRoot] = cgroup.TmpfsMagic
	r := h.Probe(PressureTracepoints()...)
	if !r.KernelResult.Available || r.Kernel.String() != "5.4.0" {
		t.Errorf("kernel: %+v %+v", r.Kernel, r.KernelResult)
	}
	if r.RingBuffer.Available || !strings.Contains(r.RingBuffer.Reason, "5.8") {
		t.Errorf("ring buffer on 5.4: %+v", r.RingBuffer)
	}
	if len(r.Tracepoints) != len(PressureTracepoints()) {
		t.Errorf("%d tracepoint results, want %d", len(r.Tracepoints), len(PressureTracepoints()))
	}
	missing := map[string]bool{}
	for _, m := range r.Missing() {
		missing[m.Name] = true
	}
	for _, name := range []string{"btf", "psi", "ringbuf", "tracefs", "bpffs", "seccomp", "tracepoint oom:mark_victim"} {
		if !missing[name] {
			t.Errorf("%s not reported missing: %v", name, missing)
		}
	}
	if missing["kernel"] || missing["cgroup"] {
		t.Errorf("kernel or cgroup reported missing: %v", missing)
	}
	out := r.String()
	for _, want := range []string{"kernel ", "ok", "5.4.0 (release 5.4.0-91-generic)", "psi ", "MISSING", "tracepoint block:block_rq_complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("String() lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != len(r.Results()) {
		t.Errorf("String() has %d lines, want one per result (%d):\n%s", lines, len(r.Results()), out)
	}
}

func TestRingBufferNewKernel(t *testing.T) {
	h := newFakeHost(t, "5.8.0")
	if r := h.RingBuffer(); !r.Available {
		t.Errorf("5.8: %+v", r)
	}
	h.Release = func() (string, error) { return "", errors.New("uname failed") }
	if r := h.RingBuffer(); r.Available || !strings.Contains(r.Reason, "uname failed") {
		t.Errorf("no release: %+v", r)
	}
}
