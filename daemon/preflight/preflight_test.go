package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
	"github.com/plinth/plinth/kernel/seccomp"
)

// fakeHost is a fixture tree of /proc and /sys with a statfs table, and fakes for the
// probes that would ask the kernel.
type fakeHost struct {
	t      *testing.T
	root   string
	magics map[string]int64
	env    Env
}

const memoryPressure = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

// newFakeHost is a healthy unified-cgroup 6.12 host with swap off.
func newFakeHost(t *testing.T) *fakeHost {
	root := t.TempDir()
	h := &fakeHost{t: t, root: root, magics: map[string]int64{}}
	s := features.NewSystem(root)
	s.Statfs = func(p string) (int64, error) {
		if m, ok := h.magics[p]; ok {
			return m, nil
		}
		return 0, &fs.PathError{Op: "statfs", Path: p, Err: fs.ErrNotExist}
	}
	ok := func() error { return nil }
	s.BPFMapType = func(ebpf.MapType) error { return nil }
	s.BPFProgramType = func(ebpf.ProgramType) error { return nil }
	s.LoadTpBTF = func(string) error { return nil }
	s.KernelBTFType = func(string) error { return nil }
	s.NFTables = ok
	h.env = Env{
		System:     s,
		Libseccomp: func() (seccomp.Support, error) { return seccomp.Support{Major: 2, Minor: 5, Micro: 4, API: 6}, nil },
		Runc: func(context.Context, string) (string, string, error) {
			return "/usr/bin/runc", "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1\nspec: 1.0.2-dev\n", nil
		},
	}
	h.magics[s.CgroupRoot] = cgroup.Cgroup2SuperMagic
	h.magics[s.TracefsDir] = features.TracefsMagic
	h.magics[s.BPFFSDir] = features.BPFFSMagic
	for name, content := range map[string]string{
		"proc/sys/kernel/osrelease":                             "6.12.48+deb13-amd64\n",
		"proc/cmdline":                                          "root=/dev/vda1 ro quiet\n",
		"proc/pressure/memory":                                  memoryPressure,
		"proc/swaps":                                            "Filename\tType\tSize\tUsed\tPriority\n",
		"proc/sys/kernel/seccomp/actions_avail":                 "kill_process kill_thread trap errno user_notif trace log allow\n",
		"proc/sys/net/ipv4/ip_forward":                          "0\n",
		"proc/sys/net/netfilter/nf_conntrack_max":               "65536\n",
		"proc/sys/vm/overcommit_memory":                         "1\n",
		"proc/sys/vm/panic_on_oom":                              "0\n",
		"proc/sys/kernel/pid_max":                               "4194304\n",
		"proc/sys/user/max_user_namespaces":                     "63000\n",
		"sys/kernel/btf/vmlinux":                                "BTF",
		"sys/fs/cgroup/cgroup.controllers":                      "cpuset cpu io memory hugetlb pids\n",
		"sys/fs/cgroup/system.slice/memory.swap.max":            "max\n",
		"sys/kernel/tracing/events/oom/mark_victim/id":          "1\n",
		"sys/kernel/tracing/events/sched/sched_process_fork/id": "2\n",
	} {
		h.write(name, content)
	}
	return h
}

func (h *fakeHost) write(rel, content string) {
	h.t.Helper()
	p := filepath.Join(h.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// podNode is what a node with a kubeconfig runs: pods and the Service proxy.
func podNode() Needs {
	c := config.Defaults()
	c.Kubeconfig = "/etc/plinth/kubeconfig"
	return NeedsOf(c)
}

func (h *fakeHost) run(n Needs) Report { return Run(context.Background(), h.env, n) }

// check returns the named check, failing the test when there is none.
func check(t *testing.T, r Report, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in:\n%s", name, r)
	return Check{}
}

func expect(t *testing.T, r Report, name string, st Status, reasonParts ...string) {
	t.Helper()
	c := check(t, r, name)
	if c.Status != st {
		t.Errorf("%s: %s, want %s: %s", name, c.Status, st, c.Reason)
	}
	for _, p := range reasonParts {
		if !strings.Contains(c.Reason, p) {
			t.Errorf("%s: reason %q lacks %q", name, c.Reason, p)
		}
	}
}

func TestHealthyHostPasses(t *testing.T) {
	h := newFakeHost(t)
	r := h.run(podNode())
	for _, c := range r.Checks {
		if c.Status != Pass {
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Reason)
		}
	}
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	expect(t, r, "kernel", Pass, "6.12.48")
	expect(t, r, "cgroup mode", Pass, "unified")
	expect(t, r, "runc", Pass, "1.1.5+ds1")
	expect(t, r, "libseccomp", Pass, "2.5.4")
	expect(t, r, "net.ipv4.ip_forward", Pass, "plinthd sets it to 1")
	expect(t, r, "user namespaces", Pass, "not used")
	// Every tracepoint the BPF programs use has a line.
	for _, tp := range features.PressureTracepoints() {
		check(t, r, "tracepoint "+tp.String())
	}
}

func TestSwap(t *testing.T) {
	const swapOn = "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition 2097148 0 -2\n"
	for _, tc := range []struct {
		name       string
		failSwapOn bool
		behavior   string
		swaps      string
		hybrid     bool
		noAcct     bool
		want       Status
		why        string
	}{
		{"off", true, config.NoSwap, "", false, false, Pass, "off"},
		{"on and failSwapOn", true, config.NoSwap, swapOn, false, false, Fail, "failSwapOn is true: turn swap off"},
		{"on, NoSwap", false, config.NoSwap, swapOn, false, false, Pass, "memory.swap.max=0"},
		{"on, LimitedSwap", false, config.LimitedSwap, swapOn, false, false, Pass, "Burstable"},
		{"on, LimitedSwap on v1", false, config.LimitedSwap, swapOn, true, false, Fail, "LimitedSwap needs cgroup v2"},
		{"on, NoSwap on v1", false, config.NoSwap, swapOn, true, false, Warn, "cannot keep containers without a memory limit off swap"},
		{"on, LimitedSwap without accounting", false, config.LimitedSwap, swapOn, false, true, Fail, "cannot be limited"},
		{"on, NoSwap without accounting", false, config.NoSwap, swapOn, false, true, Warn, "cannot be limited"},
		{"off, LimitedSwap on v1", true, config.LimitedSwap, "", true, false, Warn, "would need cgroup v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t)
			if tc.swaps != "" {
				h.write("proc/swaps", tc.swaps)
			}
			if tc.hybrid {
				h.magics[h.env.System.CgroupRoot] = cgroup.TmpfsMagic
				h.magics[filepath.Join(h.env.System.CgroupRoot, "unified")] = cgroup.Cgroup2SuperMagic
				h.write("proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t2\t1\t1\nmemory\t3\t1\t1\npids\t4\t1\t1\n")
				h.write("sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "9223372036854771712\n")
			}
			if tc.noAcct {
				if err := os.Remove(filepath.Join(h.root, "sys/fs/cgroup/system.slice/memory.swap.max")); err != nil {
					t.Fatal(err)
				}
			}
			n := podNode()
			n.FailSwapOn, n.SwapBehavior = tc.failSwapOn, tc.behavior
			r := h.run(n)
			expect(t, r, "swap", tc.want, tc.why)
			if tc.want == Fail {
				if err := r.Err(); err == nil || !strings.Contains(err.Error(), "swap: ") {
					t.Errorf("Err() = %v, want one naming swap", err)
				}
			}
			if tc.swaps != "" && !strings.Contains(check(t, r, "swap").Reason, "2047 MiB on /dev/vda2") {
				t.Errorf("swap reason lacks the size and device: %s", check(t, r, "swap").Reason)
			}
		})
	}
}

func TestOldKernelFailsOnlyWhatIsUsed(t *testing.T) {
	h := newFakeHost(t)
	h.write("proc/sys/kernel/osrelease", "5.10.0-28-amd64\n")
	r := h.run(podNode())
	expect(t, r, "nftables", Fail, "5.10 is older than 5.13", "kube-proxy's nftables mode")
	expect(t, r, "user namespaces", Pass, "older than the 6.5")
	// cgroup v2 is fine on 5.10 (5.8 needed); on 5.4 it is not.
	expect(t, r, "cgroup mode", Pass)
	h.write("proc/sys/kernel/osrelease", "5.4.0-91-generic\n")
	r = h.run(podNode())
	expect(t, r, "cgroup mode", Fail, "older than 5.8")

	// Standalone (no pods, no proxy): the same kernel fails nothing.
	r = h.run(NeedsOf(config.Defaults()))
	if f := r.Failed(); len(f) != 0 {
		t.Errorf("standalone on 5.4 failed %v", f)
	}
	expect(t, r, "cgroup mode", Warn, "older than 5.8")
}

func TestMissingFeatures(t *testing.T) {
	h := newFakeHost(t)
	s := h.env.System
	s.NFTables = func() error { return errors.New("creating table ip plinth-preflight: protocol not supported") }
	s.BPFMapType = func(ebpf.MapType) error { return syscall.EPERM }
	s.LoadTpBTF = func(string) error { return syscall.EINVAL }
	read := s.ReadFile
	s.ReadFile = func(p string) ([]byte, error) {
		if strings.Contains(p, "pressure") {
			return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EOPNOTSUPP}
		}
		return read(p)
	}
	h.write("proc/cmdline", "root=/dev/vda1 psi=0\n")
	h.write("sys/fs/cgroup/cgroup.controllers", "cpu io\n")
	h.write("proc/sys/vm/panic_on_oom", "1\n")
	h.write("proc/sys/vm/overcommit_memory", "2\n")
	h.env.Runc = func(context.Context, string) (string, string, error) {
		return "", "", errors.New("no runc in PATH")
	}
	h.env.Libseccomp = func() (seccomp.Support, error) { return seccomp.Support{}, seccomp.ErrUnsupported }
	n := podNode()
	r := h.run(n)
	expect(t, r, "nftables", Fail, "protocol not supported", "Service proxy")
	expect(t, r, "psi", Warn, "psi=0 on the kernel command line")
	expect(t, r, "ringbuf", Warn, "operation not permitted")
	expect(t, r, "bpf tp_btf programs", Warn, "invalid argument")
	expect(t, r, "cgroup controllers", Fail, "memory, pids missing")
	expect(t, r, "runc", Fail, "no runc in PATH", "pods.runcPath is empty")
	expect(t, r, "libseccomp", Warn, "not built in")
	expect(t, r, "vm.panic_on_oom", Warn, "panics")
	expect(t, r, "vm.overcommit_memory", Warn, "strict")
	err := r.Err()
	for _, want := range []string{"nftables: ", "cgroup controllers: ", "runc: "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, lacks %q", err, want)
		}
	}

	// With seccompDefault every container needs libseccomp.
	n.SeccompDefault = true
	expect(t, h.run(n), "libseccomp", Fail, "not built in")
	// A configured runc path is named.
	n.RuncPath = "/opt/runc"
	expect(t, h.run(n), "runc", Fail, "pods.runcPath")
}

func TestPIDMax(t *testing.T) {
	h := newFakeHost(t)
	h.write("proc/sys/kernel/pid_max", "32768\n")
	n := podNode()
	n.PodPidsLimit = 1024
	expect(t, h.run(n), "kernel.pid_max", Warn, "110 × 1024")
	n.PodPidsLimit = 100
	expect(t, h.run(n), "kernel.pid_max", Pass, "32768")
}

func TestParseRuncVersion(t *testing.T) {
	for _, tc := range []struct {
		out          string
		major, minor int
		full         string
	}{
		{"runc version 1.5.2\nspec: 1.3.0\ngo: go1.26.8\nlibseccomp: 2.5.4\n", 1, 5, "1.5.2"},
		{"runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1\n", 1, 1, "1.1.5+ds1"},
		{"runc version 1.2.0-rc.1\n", 1, 2, "1.2.0-rc.1"},
	} {
		major, minor, full, err := ParseRuncVersion(tc.out)
		if err != nil || major != tc.major || minor != tc.minor || full != tc.full {
			t.Errorf("ParseRuncVersion(%q) = %d %d %q %v", tc.out, major, minor, full, err)
		}
	}
	for _, bad := range []string{"", "crun version 1.8\n", "runc version one.two\n", "runc version 1\n", "runc version -1.2\n", "runc version +1.2\n"} {
		if _, _, _, err := ParseRuncVersion(bad); err == nil {
			t.Errorf("ParseRuncVersion(%q) succeeded", bad)
		}
	}
	h := newFakeHost(t)
	h.env.Runc = func(context.Context, string) (string, string, error) {
		return "/usr/bin/runc", "runc version 1.0.3\n", nil
	}
	expect(t, h.run(podNode()), "runc", Warn, "older than 1.1")
}

func TestReportFormats(t *testing.T) {
	r := Report{Checks: []Check{{"kernel", Pass, "6.1.0"}, {"swap", Fail, "on"}}}
	if got := r.String(); got != "PASS  kernel  6.1.0\nFAIL  swap    on\n" {
		t.Errorf("String() = %q", got)
	}
	var back Report
	if err := json.Unmarshal(r.JSON(), &back); err != nil || fmt.Sprint(back) != fmt.Sprint(r) {
		t.Errorf("JSON round trip = %+v, %v", back, err)
	}
	if !bytes.Contains(r.JSON(), []byte(`"status": "FAIL"`)) {
		t.Errorf("JSON = %s", r.JSON())
	}
}

func FuzzParseRuncVersion(f *testing.F) {
	for _, s := range []string{"runc version 1.5.2\nspec: 1.3.0\n", "runc version 1.1.5+ds1\n", "runc version 1\n", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		major, minor, full, err := ParseRuncVersion(out)
		if err != nil {
			return
		}
		if major < 0 || minor < 0 {
			t.Fatalf("ParseRuncVersion(%q) = %d.%d", out, major, minor)
		}
		// What it read parses again to the same numbers.
		m2, n2, full2, err := ParseRuncVersion("runc version " + full + "\n")
		if err != nil || m2 != major || n2 != minor || full2 != full {
			t.Fatalf("ParseRuncVersion(%q) = %d %d %q; again: %d %d %q %v", out, major, minor, full, m2, n2, full2, err)
		}
	})
}
