//go:build linux && cgo

package seccomp

import (
	"errors"
	"fmt"
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Probe reports the linked libseccomp's version and the API level it negotiated with
// the kernel.
func Probe() (Support, error) {
	var s Support
	s.Major, s.Minor, s.Micro = libseccomp.GetLibraryVersion()
	api, err := libseccomp.GetAPI()
	if err != nil {
		return s, fmt.Errorf("libseccomp API level: %w", err)
	}
	s.API = api
	return s, nil
}

// NativeArch returns the architecture plinthd runs on, in the runtime spec's naming.
func NativeArch() (specs.Arch, error) {
	a, err := libseccomp.GetNativeArch()
	if err != nil {
		return "", fmt.Errorf("libseccomp native architecture: %w", err)
	}
	for spec, name := range archNames {
		if sa, err := libseccomp.GetArchFromString(name); err == nil && sa == a {
			return spec, nil
		}
	}
	return "", fmt.Errorf("libseccomp native architecture %s has no runtime-spec name", a)
}

func scmpArch(a specs.Arch) (libseccomp.ScmpArch, error) {
	name, ok := archNames[a]
	if !ok {
		return libseccomp.ArchInvalid, fmt.Errorf("unknown architecture %q", a)
	}
	sa, err := libseccomp.GetArchFromString(name)
	if err != nil {
		return libseccomp.ArchInvalid, fmt.Errorf("architecture %q: %w", a, err)
	}
	return sa, nil
}

// LookupSyscall resolves name on arch. libseccomp answers a negative pseudo-number for
// a syscall it knows but the architecture lacks, and an error for a name it does not
// know at all.
func LookupSyscall(arch specs.Arch, name string) (Lookup, error) {
	sa, err := scmpArch(arch)
	if err != nil {
		return Lookup{}, err
	}
	nr, err := libseccomp.GetSyscallFromNameByArch(name, sa)
	if err != nil {
		return Lookup{}, nil
	}
	if int32(nr) < 0 {
		return Lookup{Known: true}, nil
	}
	return Lookup{Known: true, OnArch: true, Number: int(nr)}, nil
}

// Filter is a libseccomp filter built from a profile. Release it when done.
type Filter struct {
	f *libseccomp.ScmpFilter
	// skipped counts rules whose action equals the default action; runc skips them too
	// (libseccomp refuses them as redundant).
	skipped int
}

// Release frees the filter.
func (f *Filter) Release() { f.f.Release() }

// Skipped is the number of rules left out because their action is the default action.
func (f *Filter) Skipped() int { return f.skipped }

// action converts a runtime-spec action (with its errno for ERRNO and TRACE) as runc
// does: SCMP_ACT_KILL is KILL_THREAD, ERRNO defaults to EPERM and TRACE to EPERM.
func action(a specs.LinuxSeccompAction, errnoRet *uint) (libseccomp.ScmpAction, error) {
	switch a {
	case specs.ActKill, specs.ActKillThread:
		return libseccomp.ActKillThread, nil
	case specs.ActKillProcess:
		return libseccomp.ActKillProcess, nil
	case specs.ActTrap:
		return libseccomp.ActTrap, nil
	case specs.ActErrno:
		if errnoRet != nil {
			return libseccomp.ActErrno.SetReturnCode(int16(*errnoRet)), nil
		}
		return libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), nil
	case specs.ActTrace:
		if errnoRet != nil {
			return libseccomp.ActTrace.SetReturnCode(int16(*errnoRet)), nil
		}
		return libseccomp.ActTrace.SetReturnCode(int16(unix.EPERM)), nil
	case specs.ActAllow:
		return libseccomp.ActAllow, nil
	case specs.ActLog:
		return libseccomp.ActLog, nil
	case specs.ActNotify:
		return libseccomp.ActNotify, nil
	}
	return libseccomp.ActInvalid, fmt.Errorf("unknown action %q", a)
}

var operators = map[specs.LinuxSeccompOperator]libseccomp.ScmpCompareOp{
	specs.OpNotEqual: libseccomp.CompareNotEqual, specs.OpLessThan: libseccomp.CompareLess,
	specs.OpLessEqual: libseccomp.CompareLessOrEqual, specs.OpEqualTo: libseccomp.CompareEqual,
	specs.OpGreaterEqual: libseccomp.CompareGreaterEqual, specs.OpGreaterThan: libseccomp.CompareGreater,
	specs.OpMaskedEqual: libseccomp.CompareMaskedEqual,
}

// Build builds the filter runc would build from p: the default action, the extra
// architectures, the flags, then one rule per syscall name, skipping rules whose action
// is the default action; a rule whose conditions compare one argument twice becomes one
// rule per condition (runc's "OR" reading of such rules). Unlike runc, a name libseccomp
// does not know is an error (runc silently ignores it). The filter is not loaded.
func Build(p *specs.LinuxSeccomp) (*Filter, error) {
	if p == nil {
		return nil, errors.New("no profile")
	}
	defAct, err := action(p.DefaultAction, p.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("defaultAction: %w", err)
	}
	if p.DefaultAction == specs.ActNotify {
		// runc refuses it: the runtime's own writes after loading would block on the agent.
		return nil, errors.New("defaultAction: SCMP_ACT_NOTIFY cannot be the default action")
	}
	lf, err := libseccomp.NewFilter(defAct)
	if err != nil {
		return nil, fmt.Errorf("defaultAction %s: %w", p.DefaultAction, err)
	}
	f := &Filter{f: lf}
	ok := false
	defer func() {
		if !ok {
			lf.Release()
		}
	}()
	for i, a := range p.Architectures {
		sa, err := scmpArch(a)
		if err != nil {
			return nil, fmt.Errorf("architectures[%d]: %w", i, err)
		}
		if err := lf.AddArch(sa); err != nil {
			return nil, fmt.Errorf("architectures[%d]: %q: %w", i, a, err)
		}
	}
	for i, fl := range p.Flags {
		if err := setFlag(lf, fl); err != nil {
			return nil, fmt.Errorf("flags[%d]: %q: %w", i, fl, err)
		}
	}
	if len(p.Syscalls) > 32 {
		// runc turns on libseccomp's binary tree for long rule lists (and only then:
		// libseccomp <= 2.5.4 misbehaves with it and no rules). An old library refusing
		// it is not an error.
		_ = lf.SetOptimize(2)
	}
	// runc sets no_new_privs itself when the container asks for it.
	if err := lf.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("clearing the no_new_privs attribute: %w", err)
	}
	for i, sc := range p.Syscalls {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d].action: %w", i, err)
		}
		conds, err := conditions(sc.Args)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d].args: %w", i, err)
		}
		for j, name := range sc.Names {
			if act == defAct {
				f.skipped++
				continue
			}
			if sc.Action == specs.ActNotify && name == "write" {
				return nil, &RuleError{i, j, errors.New("SCMP_ACT_NOTIFY cannot be used for write (runc reports the notify fd with a write)")}
			}
			nr, err := libseccomp.GetSyscallFromName(name)
			if err != nil {
				return nil, &RuleError{i, j, fmt.Errorf("unknown syscall %q", name)}
			}
			if err := addRule(lf, nr, act, conds); err != nil {
				return nil, &RuleError{i, j, fmt.Errorf("%q: %w", name, err)}
			}
		}
	}
	ok = true
	return f, nil
}

func conditions(args []specs.LinuxSeccompArg) ([][]libseccomp.ScmpCondition, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var all []libseccomp.ScmpCondition
	seen := map[uint]bool{}
	repeated := false
	for k, a := range args {
		op, ok := operators[a.Op]
		if !ok {
			return nil, fmt.Errorf("[%d].op: unknown operator %q", k, a.Op)
		}
		c, err := libseccomp.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", k, err)
		}
		repeated = repeated || seen[a.Index]
		seen[a.Index] = true
		all = append(all, c)
	}
	if !repeated {
		return [][]libseccomp.ScmpCondition{all}, nil
	}
	split := make([][]libseccomp.ScmpCondition, len(all))
	for k, c := range all {
		split[k] = []libseccomp.ScmpCondition{c}
	}
	return split, nil
}

func addRule(f *libseccomp.ScmpFilter, nr libseccomp.ScmpSyscall, act libseccomp.ScmpAction, conds [][]libseccomp.ScmpCondition) error {
	if conds == nil {
		return f.AddRule(nr, act)
	}
	for _, c := range conds {
		if err := f.AddRuleConditional(nr, act, c); err != nil {
			return err
		}
	}
	return nil
}

func setFlag(f *libseccomp.ScmpFilter, fl specs.LinuxSeccompFlag) error {
	switch fl {
	case "SECCOMP_FILTER_FLAG_TSYNC":
		return nil // libseccomp-golang synchronises all threads whenever it can
	case specs.LinuxSeccompFlagLog:
		return f.SetLogBit(true)
	case specs.LinuxSeccompFlagSpecAllow:
		return f.SetSSB(true)
	case specs.LinuxSeccompFlagWaitKillableRecv:
		return f.SetWaitKill(true)
	}
	return errors.New("unknown flag")
}

// Instructions generates the filter's BPF program (libseccomp reports some problems
// only then) and returns its length in instructions. It writes to a memfd: ExportBPFMem
// needs libseccomp 2.6, and a pipe could fill.
func (f *Filter) Instructions() (int, error) {
	fd, err := unix.MemfdCreate("plinth-seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return 0, fmt.Errorf("memfd for the BPF program: %w", err)
	}
	file := os.NewFile(uintptr(fd), "plinth-seccomp-bpf")
	defer file.Close()
	if err := f.f.ExportBPF(file); err != nil {
		return 0, fmt.Errorf("generating the BPF program: %w", err)
	}
	st, err := file.Stat()
	if err != nil {
		return 0, err
	}
	return int(st.Size() / unix.SizeofSockFilter), nil
}

// LoadIntoThisProcess sets no_new_privs and installs the filter on every thread of the
// calling process, for good. Only a process that exists to run under the filter (a
// test's re-executed child) may call it.
func (f *Filter) LoadIntoThisProcess() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := f.f.Load(); err != nil {
		return fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return nil
}
