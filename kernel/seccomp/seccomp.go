package seccomp

import (
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ErrUnsupported is returned everywhere when plinthd is built without cgo or for
// another OS than Linux.
var ErrUnsupported = errors.New("seccomp support is not built in (needs linux and cgo with libseccomp)")

// Lookup is how libseccomp resolves one syscall name on one architecture.
type Lookup struct {
	// Known is false when libseccomp has never heard of the name (a typo, or a syscall
	// newer than the library).
	Known bool
	// OnArch is false when the name is known but the architecture has no such syscall
	// (open on aarch64, socketcall on x86_64): a rule for it has no effect there.
	OnArch bool
	// Number is the syscall number on the architecture when OnArch.
	Number int
}

// Support is what the linked libseccomp and the running kernel offer.
type Support struct {
	Major, Minor, Micro uint
	// API is libseccomp's API level: 3 adds KILL_PROCESS, LOG and the LOG flag, 4 the
	// SPEC_ALLOW flag, 5 and 6 user notification (runc asks for 6), 7 the
	// WAIT_KILLABLE_RECV flag.
	API uint
}

func (s Support) String() string {
	return fmt.Sprintf("libseccomp %d.%d.%d, API level %d", s.Major, s.Minor, s.Micro, s.API)
}

// RuleError says which rule of a profile libseccomp refused, so that callers can name
// it in the profile: Syscall indexes LinuxSeccomp.Syscalls and Name that rule's Names.
type RuleError struct {
	Syscall, Name int
	Err           error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("syscalls[%d].names[%d]: %v", e.Syscall, e.Name, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }

// minAPI is the libseccomp API level each action needs, as libseccomp documents it;
// NOTIFY asks for 6 as runc does (it needs the fixes of libseccomp 2.5 and Linux 5.7).
var actionMinAPI = map[specs.LinuxSeccompAction]uint{
	specs.ActKill: 0, specs.ActKillThread: 0, specs.ActTrap: 0, specs.ActErrno: 0,
	specs.ActTrace: 0, specs.ActAllow: 0,
	specs.ActKillProcess: 3, specs.ActLog: 3, specs.ActNotify: 6,
}

// flagMinAPI is the API level each filter flag needs. TSYNC is always applied by
// libseccomp-golang when available, so runc treats it as a no-op.
var flagMinAPI = map[specs.LinuxSeccompFlag]uint{
	"SECCOMP_FILTER_FLAG_TSYNC":            0,
	specs.LinuxSeccompFlagLog:              3,
	specs.LinuxSeccompFlagSpecAllow:        4,
	specs.LinuxSeccompFlagWaitKillableRecv: 7,
}

// KnownAction reports whether a is an action of the runtime spec.
func KnownAction(a specs.LinuxSeccompAction) bool { _, ok := actionMinAPI[a]; return ok }

// KnownFlag reports whether f is a filter flag runc knows.
func KnownFlag(f specs.LinuxSeccompFlag) bool { _, ok := flagMinAPI[f]; return ok }

// ActionSupported says whether this libseccomp and kernel can use a.
func (s Support) ActionSupported(a specs.LinuxSeccompAction) error {
	min, ok := actionMinAPI[a]
	if !ok {
		return fmt.Errorf("unknown action")
	}
	if s.API < min {
		return fmt.Errorf("needs libseccomp API level %d, this node has %s", min, s)
	}
	return nil
}

// FlagSupported says whether this libseccomp and kernel can set f.
func (s Support) FlagSupported(f specs.LinuxSeccompFlag) error {
	min, ok := flagMinAPI[f]
	if !ok {
		return fmt.Errorf("unknown flag")
	}
	if s.API < min {
		return fmt.Errorf("needs libseccomp API level %d, this node has %s", min, s)
	}
	return nil
}

// archNames maps the runtime spec's architecture names to libseccomp's.
var archNames = map[specs.Arch]string{
	specs.ArchX86: "x86", specs.ArchX86_64: "amd64", specs.ArchX32: "x32",
	specs.ArchARM: "arm", specs.ArchAARCH64: "arm64",
	specs.ArchMIPS: "mips", specs.ArchMIPS64: "mips64", specs.ArchMIPS64N32: "mips64n32",
	specs.ArchMIPSEL: "mipsel", specs.ArchMIPSEL64: "mipsel64", specs.ArchMIPSEL64N32: "mipsel64n32",
	specs.ArchPPC: "ppc", specs.ArchPPC64: "ppc64", specs.ArchPPC64LE: "ppc64le",
	specs.ArchS390: "s390", specs.ArchS390X: "s390x",
	specs.ArchPARISC: "parisc", specs.ArchPARISC64: "parisc64",
	specs.ArchRISCV64: "riscv64", specs.ArchLOONGARCH64: "loong64",
	specs.ArchM68K: "m68k", specs.ArchSH: "sh", specs.ArchSHEB: "sheb",
}

// KnownArch reports whether a is an architecture of the runtime spec.
func KnownArch(a specs.Arch) bool { _, ok := archNames[a]; return ok }

// KnownOperator reports whether op is an operator of the runtime spec.
func KnownOperator(op specs.LinuxSeccompOperator) bool {
	switch op {
	case specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual, specs.OpEqualTo,
		specs.OpGreaterEqual, specs.OpGreaterThan, specs.OpMaskedEqual:
		return true
	}
	return false
}
