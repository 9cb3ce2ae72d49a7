package features

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/psi"
)

// Result is the outcome of one probe.
type Result struct {
	// Name says what was probed: "kernel", "btf", "psi", "cgroup", "ringbuf",
	// "tracefs", "bpffs" or "tracepoint <group>:<name>".
	Name      string
	Available bool
	// Reason says why, in words a person can act on ("disabled at boot; add psi=1 to the
	// kernel command line").
	Reason string
}

// Filesystem magic numbers from linux/magic.h.
const (
	TracefsMagic = 0x74726163
	BPFFSMagic   = 0xcafe4a11
)

// System says where the probes look. HostSystem returns the running system's; NewSystem
// one rooted elsewhere (a fixture tree); tests also replace the functions with fakes.
type System struct {
	ProcDir    string // /proc
	SysDir     string // /sys
	BootDir    string // /boot, for config-<release> when /proc/config.gz is absent
	CgroupRoot string // /sys/fs/cgroup
	// TracefsDir is where tracefs is (or would be) mounted: /sys/kernel/tracing.
	TracefsDir string
	// DebugTracingDir is tracefs under debugfs, used when TracefsDir is not mounted:
	// /sys/kernel/debug/tracing.
	DebugTracingDir string
	BPFFSDir        string // /sys/fs/bpf

	// Statfs returns the filesystem magic at a path.
	Statfs cgroup.StatfsFunc
	// ReadFile reads a file; PSI's "disabled at boot" shows only as a read error.
	ReadFile func(path string) ([]byte, error)
	// Release returns the kernel release (uname -r).
	Release func() (string, error)
	// Mount mounts a filesystem (mount(2)); used by MountTracefs and MountBPFFS.
	Mount func(source, target, fstype string, flags uintptr, data string) error

	// The probes below ask the kernel itself (the BPF syscall, netlink in a fresh
	// network namespace) and so exist only for the running system; nil means "not
	// probed", which the results say.

	// BPFMapType and BPFProgramType tell whether the kernel accepts a BPF map or
	// program type (cilium/ebpf's features probes; nil error when it does).
	BPFMapType     func(ebpf.MapType) error
	BPFProgramType func(ebpf.ProgramType) error
	// LoadTpBTF loads (and frees) a trivial tp_btf program for the named tracepoint.
	// cilium/ebpf's probe of the Tracing type goes through fentry, which kernels
	// without kprobes refuse although they load tp_btf programs.
	LoadTpBTF func(tracepoint string) error
	// NFTables creates an nftables table with a NAT chain in a fresh network
	// namespace and reads it back.
	NFTables func() error
	// KernelBTFType tells whether the kernel's BTF has a type of that name
	// (btf_trace_<tracepoint> for a tp_btf program to attach to).
	KernelBTFType func(name string) error
}

// HostSystem returns a System that probes the running kernel.
func HostSystem() *System {
	s := NewSystem("/")
	s.Statfs = cgroup.HostStatfs
	s.Mount = hostMount
	s.BPFMapType, s.BPFProgramType, s.NFTables = haveBPFMapType, haveBPFProgramType, nftablesInFreshNetNS
	s.KernelBTFType, s.LoadTpBTF = kernelBTFType, loadTpBTF
	return s
}

// NewSystem returns a System reading the files of the tree at root ("/" for the
// running system): the kernel release from proc/sys/kernel/osrelease, statfs through
// the real call (so a fixture tree has no cgroup, tracefs or bpffs mounted), and none
// of the probes that ask the kernel itself. It mounts nothing.
func NewSystem(root string) *System {
	s := &System{
		ProcDir:         filepath.Join(root, "proc"),
		SysDir:          filepath.Join(root, "sys"),
		BootDir:         filepath.Join(root, "boot"),
		CgroupRoot:      filepath.Join(root, cgroup.DefaultRoot),
		TracefsDir:      filepath.Join(root, "sys/kernel/tracing"),
		DebugTracingDir: filepath.Join(root, "sys/kernel/debug/tracing"),
		BPFFSDir:        filepath.Join(root, "sys/fs/bpf"),
		Statfs:          cgroup.HostStatfs,
		ReadFile:        os.ReadFile,
		Mount: func(_, target, fstype string, _ uintptr, _ string) error {
			return fmt.Errorf("mount %s on %s: a System over a fixture tree mounts nothing", fstype, target)
		},
	}
	s.Release = func() (string, error) {
		b, err := s.ReadFile(filepath.Join(s.ProcDir, "sys/kernel/osrelease"))
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	return s
}

// Kernel parses the running kernel's release.
func (s *System) Kernel() (KernelVersion, Result) {
	r := Result{Name: "kernel"}
	rel, err := s.Release()
	if err != nil {
		r.Reason = fmt.Sprintf("uname: %v", err)
		return KernelVersion{}, r
	}
	v, err := ParseKernelRelease(rel)
	if err != nil {
		r.Reason = err.Error()
		return KernelVersion{}, r
	}
	r.Available, r.Reason = true, fmt.Sprintf("%s (release %s)", v, rel)
	return v, r
}

// RingBuffer tells whether BPF ring buffers (BPF_MAP_TYPE_RINGBUF, Linux 5.8) exist:
// by creating one where the System can ask the kernel, else by the kernel version.
func (s *System) RingBuffer() Result {
	r := Result{Name: "ringbuf"}
	if s.BPFMapType != nil {
		if err := s.BPFMapType(ebpf.RingBuf); err != nil {
			r.Reason = fmt.Sprintf("creating a BPF ring buffer failed: %v; OOM and reclaim events are not collected", err)
			return r
		}
		r.Available, r.Reason = true, "a BPF ring buffer was created"
		return r
	}
	v, kr := s.Kernel()
	switch {
	case !kr.Available:
		r.Reason = "kernel version unknown: " + kr.Reason
	case v.AtLeast(5, 8):
		r.Available, r.Reason = true, fmt.Sprintf("kernel %d.%d has BPF ring buffers (5.8 or newer; not probed)", v.Major, v.Minor)
	default:
		r.Reason = fmt.Sprintf("kernel %d.%d predates BPF ring buffers (5.8); OOM and reclaim events are not collected", v.Major, v.Minor)
	}
	return r
}

// BPFPrograms tells whether the kernel loads the two kinds of program plinthd's BPF
// objects carry: plain tracepoint programs and tp_btf (BTF-typed tracing) programs.
// Plinth needs one of them; tp_btf also needs BTF (see BTF).
func (s *System) BPFPrograms() (tracepoint, tpBTF Result) {
	tracepoint, tpBTF = Result{Name: "bpf tracepoint programs"}, Result{Name: "bpf tp_btf programs"}
	if s.BPFProgramType == nil {
		tracepoint.Reason, tpBTF.Reason = "not probed (no BPF syscall on a fixture tree)", "not probed (no BPF syscall on a fixture tree)"
		return tracepoint, tpBTF
	}
	if err := s.BPFProgramType(ebpf.TracePoint); err != nil {
		tracepoint.Reason = fmt.Sprintf("loading a tracepoint program failed: %v", err)
	} else {
		tracepoint.Available, tracepoint.Reason = true, "a tracepoint program loaded"
	}
	if s.LoadTpBTF == nil {
		tpBTF.Reason = "not probed"
	} else if err := s.LoadTpBTF("sched_process_fork"); err != nil {
		tpBTF.Reason = fmt.Sprintf("loading a tp_btf program for sched_process_fork failed: %v; plain tracepoints are used", err)
	} else {
		tpBTF.Available, tpBTF.Reason = true, "a tp_btf program for sched_process_fork loaded"
	}
	return tracepoint, tpBTF
}

// BTF tells whether the kernel exposes its type information for CO-RE.
func (s *System) BTF() Result {
	r := Result{Name: "btf"}
	p := filepath.Join(s.SysDir, "kernel/btf/vmlinux")
	st, err := os.Stat(p)
	switch {
	case err == nil && st.Size() > 0:
		r.Available, r.Reason = true, fmt.Sprintf("%s (%.1f MiB)", p, float64(st.Size())/(1<<20))
	case err == nil:
		r.Reason = p + " is empty"
	case errors.Is(err, fs.ErrNotExist):
		r.Reason = fmt.Sprintf("no %s: kernel built without CONFIG_DEBUG_INFO_BTF; BPF programs need BTF", p)
	default:
		r.Reason = err.Error()
	}
	return r
}

// PSI tells whether pressure stall information is present and enabled. A kernel built
// with CONFIG_PSI but booted with psi=0, or built with CONFIG_PSI_DEFAULT_DISABLED and
// booted without psi=1, either has /proc/pressure whose files fail to read with
// EOPNOTSUPP (older kernels) or no /proc/pressure at all (newer ones): both count as
// absent, and the reason tells the cases apart from the command line and, where the
// kernel publishes it, its build configuration.
func (s *System) PSI() Result {
	r := Result{Name: "psi"}
	p := filepath.Join(s.ProcDir, "pressure/memory")
	b, err := s.ReadFile(p)
	switch {
	case errors.Is(err, syscall.EOPNOTSUPP):
		r.Reason = fmt.Sprintf("%s exists but reading it fails (%v): %s", p, syscall.EOPNOTSUPP, s.psiOffReason(true))
		return r
	case errors.Is(err, fs.ErrNotExist):
		r.Reason = fmt.Sprintf("no %s: %s", p, s.psiOffReason(false))
		return r
	case err != nil:
		r.Reason = err.Error()
		return r
	}
	pr, err := psi.Parse(strings.NewReader(string(b)))
	if err != nil {
		r.Reason = fmt.Sprintf("%s: %v", p, err)
		return r
	}
	r.Available = true
	r.Reason = fmt.Sprintf("enabled (memory some avg10=%.2f full avg10=%.2f)", pr.Some.Avg10, pr.Full.Avg10)
	return r
}

// psiOffReason says why PSI is off, as precisely as the system tells; present says
// /proc/pressure exists (so the kernel has CONFIG_PSI).
func (s *System) psiOffReason(present bool) string {
	params, _ := s.Cmdline()
	if v, ok := params["psi"]; ok && !boolParamTrue(v) {
		return fmt.Sprintf("disabled at boot by psi=%s on the kernel command line; remove it or use psi=1", v)
	}
	v, kr := s.Kernel()
	if kr.Available && !v.AtLeast(4, 20) {
		return fmt.Sprintf("kernel %d.%d predates PSI (4.20)", v.Major, v.Minor)
	}
	kconf, src, err := s.KernelConfig()
	if err == nil {
		switch {
		case kconf["CONFIG_PSI"] != "y" && !present:
			return fmt.Sprintf("kernel built without CONFIG_PSI (%s)", src)
		case kconf["CONFIG_PSI_DEFAULT_DISABLED"] == "y":
			return fmt.Sprintf("disabled at boot: the kernel is built with CONFIG_PSI_DEFAULT_DISABLED (%s) and the command line lacks psi=1; add psi=1", src)
		}
	}
	if present {
		return "disabled at boot (psi=0, or a kernel built with CONFIG_PSI_DEFAULT_DISABLED booted without psi=1); add psi=1 to the kernel command line"
	}
	return "kernel built without CONFIG_PSI, or PSI disabled at boot (CONFIG_PSI_DEFAULT_DISABLED without psi=1 on the command line); add psi=1"
}

// Seccomp tells whether seccomp filters work and lists the actions the kernel offers
// (/proc/sys/kernel/seccomp/actions_avail): containers' seccomp profiles need the
// errno and allow actions at least, and SCMP_ACT_NOTIFY needs user_notif.
func (s *System) Seccomp() Result {
	r := Result{Name: "seccomp"}
	p := filepath.Join(s.ProcDir, "sys/kernel/seccomp/actions_avail")
	b, err := s.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Reason = fmt.Sprintf("no %s: kernel built without CONFIG_SECCOMP_FILTER; seccomp profiles cannot be applied", p)
		return r
	case err != nil:
		r.Reason = err.Error()
		return r
	}
	actions := strings.Fields(string(b))
	for _, need := range []string{"errno", "allow"} {
		if !slices.Contains(actions, need) {
			r.Reason = fmt.Sprintf("the kernel lacks the seccomp action %q (has: %s)", need, strings.Join(actions, " "))
			return r
		}
	}
	r.Available = true
	r.Reason = "filters with actions " + strings.Join(actions, " ")
	return r
}

// Cgroups tells the cgroup mode. Every mode is usable; per-cgroup PSI needs the v2
// tree, which legacy hosts lack.
func (s *System) Cgroups() (cgroup.Mode, Result) {
	r := Result{Name: "cgroup"}
	m, err := cgroup.DetectMode(s.CgroupRoot, s.Statfs)
	if err != nil {
		r.Reason = err.Error()
		return 0, r
	}
	r.Available = true
	switch m {
	case cgroup.Unified:
		r.Reason = fmt.Sprintf("unified: cgroup v2 at %s", s.CgroupRoot)
	case cgroup.Hybrid:
		r.Reason = fmt.Sprintf("hybrid: v1 controllers under %s, v2 tree (per-cgroup PSI) at %s", s.CgroupRoot, filepath.Join(s.CgroupRoot, "unified"))
	default:
		r.Reason = fmt.Sprintf("legacy: cgroup v1 only under %s; no per-cgroup PSI", s.CgroupRoot)
	}
	return m, r
}

// Tracefs finds a mounted tracefs: TracefsDir, else the one under debugfs. dir is ""
// when none is mounted.
func (s *System) Tracefs() (dir string, r Result) {
	r = Result{Name: "tracefs"}
	for _, d := range []string{s.TracefsDir, s.DebugTracingDir} {
		if m, err := s.Statfs(d); err == nil && m == TracefsMagic {
			r.Available, r.Reason = true, "mounted at "+d
			return d, r
		}
	}
	if _, err := os.Stat(s.TracefsDir); errors.Is(err, fs.ErrNotExist) {
		r.Reason = fmt.Sprintf("tracefs not mounted, and no %s to mount it on (kernel without CONFIG_TRACING?)", s.TracefsDir)
		return "", r
	}
	r.Reason = fmt.Sprintf("tracefs not mounted at %s (nor under debugfs at %s); MountTracefs mounts it", s.TracefsDir, s.DebugTracingDir)
	return "", r
}

// Tracepoint is a kernel tracepoint, such as oom:mark_victim.
type Tracepoint struct {
	Group, Name string
}

// String prints group:name.
func (tp Tracepoint) String() string { return tp.Group + ":" + tp.Name }

// ParseTracepoint reads "group:name".
func ParseTracepoint(s string) (Tracepoint, error) {
	g, n, ok := strings.Cut(s, ":")
	if !ok || g == "" || n == "" || strings.ContainsAny(s, "/ ") || strings.Count(s, ":") != 1 || g == ".." || n == ".." {
		return Tracepoint{}, fmt.Errorf("tracepoint %q: want group:name, such as sched:sched_process_fork", s)
	}
	return Tracepoint{Group: g, Name: n}, nil
}

// PressureTracepoints are the tracepoints plinthd's BPF programs attach to: OOM kills,
// direct reclaim, process fork and exit, and block I/O.
func PressureTracepoints() []Tracepoint {
	return []Tracepoint{
		{"oom", "mark_victim"},
		{"vmscan", "mm_vmscan_direct_reclaim_begin"},
		{"vmscan", "mm_vmscan_direct_reclaim_end"},
		{"vmscan", "mm_vmscan_memcg_reclaim_begin"},
		{"vmscan", "mm_vmscan_memcg_reclaim_end"},
		{"sched", "sched_process_fork"},
		{"sched", "sched_process_exit"},
		{"block", "block_rq_issue"},
		{"block", "block_rq_complete"},
	}
}

// Tracepoint tells whether tp exists, from events/<group>/<name>/id in tracefs.
func (s *System) Tracepoint(tp Tracepoint) Result {
	r := Result{Name: "tracepoint " + tp.String()}
	dir, tr := s.Tracefs()
	if dir == "" {
		r.Reason = tr.Reason
		return r
	}
	id := filepath.Join(dir, "events", tp.Group, tp.Name, "id")
	b, err := s.ReadFile(id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			r.Reason = fmt.Sprintf("no %s in %s/events", tp, dir)
		} else {
			r.Reason = err.Error()
		}
		return r
	}
	r.Available, r.Reason = true, fmt.Sprintf("id %s", strings.TrimSpace(string(b)))
	return r
}

// BPFFS tells whether bpffs is mounted at BPFFSDir (needed to pin BPF objects).
func (s *System) BPFFS() Result {
	r := Result{Name: "bpffs"}
	if m, err := s.Statfs(s.BPFFSDir); err == nil && m == BPFFSMagic {
		r.Available, r.Reason = true, "mounted at "+s.BPFFSDir
		return r
	}
	r.Reason = fmt.Sprintf("bpffs not mounted at %s; MountBPFFS mounts it", s.BPFFSDir)
	return r
}

// MountTracefs mounts tracefs at TracefsDir unless a tracefs is there already.
func (s *System) MountTracefs() error {
	return s.mountOnce("tracefs", s.TracefsDir, TracefsMagic)
}

// MountBPFFS mounts bpffs at BPFFSDir unless a bpffs is there already.
func (s *System) MountBPFFS() error {
	return s.mountOnce("bpf", s.BPFFSDir, BPFFSMagic)
}

func (s *System) mountOnce(fstype, dir string, magic int64) error {
	if m, err := s.Statfs(dir); err == nil && m == magic {
		return nil
	} else if err != nil {
		return fmt.Errorf("mount %s at %s: %w", fstype, dir, err)
	}
	if err := s.Mount(fstype, dir, fstype, mountFlags, ""); err != nil {
		return fmt.Errorf("mount %s at %s: %w", fstype, dir, err)
	}
	return nil
}

// NFTablesNetlink tells whether nftables works through netlink: a table with a NAT
// chain is created in a fresh network namespace (NFTables).
func (s *System) NFTablesNetlink() Result {
	r := Result{Name: "nftables"}
	if s.NFTables == nil {
		r.Reason = "not probed (no netlink on a fixture tree)"
		return r
	}
	if err := s.NFTables(); err != nil {
		r.Reason = err.Error()
		return r
	}
	r.Available, r.Reason = true, "created a table with a nat chain in a fresh network namespace"
	return r
}

// TracepointBTF tells whether a tp_btf program can attach to tp: the kernel's BTF
// describes its arguments as btf_trace_<name>. The verifier may still refuse a program
// written for other arguments; bpf/attach then falls back to the plain tracepoint.
func (s *System) TracepointBTF(tp Tracepoint) Result {
	r := Result{Name: "tp_btf " + tp.String()}
	if s.KernelBTFType == nil {
		r.Reason = "not probed (no kernel BTF on a fixture tree)"
		return r
	}
	if err := s.KernelBTFType("btf_trace_" + tp.Name); err != nil {
		r.Reason = err.Error()
		return r
	}
	r.Available, r.Reason = true, "btf_trace_"+tp.Name+" in the kernel's BTF"
	return r
}
