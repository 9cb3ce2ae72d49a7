package seccomp

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func allowedUnconditionally(p *specs.LinuxSeccomp, name string) bool {
	for _, sc := range p.Syscalls {
		if sc.Action == specs.ActAllow && len(sc.Args) == 0 && slices.Contains(sc.Names, name) {
			return true
		}
	}
	return false
}

func mentioned(p *specs.LinuxSeccomp, name string) bool {
	for _, sc := range p.Syscalls {
		if slices.Contains(sc.Names, name) {
			return true
		}
	}
	return false
}

// The profile runc gets must pass Plinth's own validation, with every name known to
// libseccomp, on every capability set.
func TestRuntimeDefaultValidatesAndCompiles(t *testing.T) {
	requireLibseccomp(t)
	for _, tc := range []struct {
		name string
		caps []string
	}{{"no capabilities", nil}, {"CAP_SYS_ADMIN", []string{"CAP_SYS_ADMIN"}}, {"every capability", allCapabilities}} {
		p := RuntimeDefault(tc.caps)
		s, err := Validate(Libseccomp{}, "RuntimeDefault", p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.Instructions == 0 {
			t.Errorf("%s: compiled to no instructions", tc.name)
		}
		t.Logf("%s: %s", tc.name, s)
	}
}

// Every name in the lists exists on at least one of the architectures Plinth builds
// the profile for (x86 family and arm family): a name on none is a typo or a syscall
// of another architecture, and has no effect anywhere Plinth runs.
func TestRuntimeDefaultNamesExistOnSupportedArchitectures(t *testing.T) {
	requireLibseccomp(t)
	p := RuntimeDefault(allCapabilities)
	p.Architectures = []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM}
	s, err := Validate(Libseccomp{}, "RuntimeDefault", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Warnings {
		t.Error(w)
	}
}

func TestRuntimeDefaultDeniesDangerousSyscallsWithoutCapabilities(t *testing.T) {
	p := RuntimeDefault([]string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE", "CAP_KILL", "CAP_SETUID", "CAP_SETGID"})
	if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
		t.Fatalf("default: %s %v, want SCMP_ACT_ERRNO with EPERM", p.DefaultAction, p.DefaultErrnoRet)
	}
	for _, name := range []string{
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "bpf",
		"perf_event_open", "mount", "umount2", "pivot_root", "fsopen", "move_mount", "keyctl", "add_key",
		"request_key", "ptrace", "process_vm_readv", "process_vm_writev", "clock_settime", "settimeofday",
		"reboot", "swapon", "swapoff", "setns", "open_by_handle_at", "userfaultfd", "iopl", "ioperm",
		"io_uring_setup", "acct", "syslog", "chroot", "modify_ldt", "vm86",
	} {
		if mentioned(p, name) {
			t.Errorf("%s is in the profile of an unprivileged container", name)
		}
	}
	for _, name := range []string{"read", "openat", "execve", "mmap", "futex", "socket", "mkdirat", "rt_sigreturn", "exit_group", "wait4"} {
		if !allowedUnconditionally(p, name) {
			t.Errorf("%s is not allowed", name)
		}
	}
}

func TestRuntimeDefaultFiltersNewUserNamespacesWithoutSysAdmin(t *testing.T) {
	p := RuntimeDefault(nil)
	for _, name := range []string{"clone", "unshare"} {
		if allowedUnconditionally(p, name) {
			t.Errorf("%s allowed without a filter on CLONE_NEWUSER", name)
		}
		found := false
		for _, sc := range p.Syscalls {
			if slices.Contains(sc.Names, name) && sc.Action == specs.ActAllow {
				found = true
				want := specs.LinuxSeccompArg{Index: 0, Value: cloneNewUser, ValueTwo: 0, Op: specs.OpMaskedEqual}
				if len(sc.Args) != 1 || sc.Args[0] != want {
					t.Errorf("%s args %+v, want %+v", name, sc.Args, want)
				}
			}
		}
		if !found {
			t.Errorf("%s not allowed at all", name)
		}
	}
	var clone3 *specs.LinuxSyscall
	for i := range p.Syscalls {
		if slices.Contains(p.Syscalls[i].Names, "clone3") {
			clone3 = &p.Syscalls[i]
		}
	}
	if clone3 == nil || clone3.Action != specs.ActErrno || clone3.ErrnoRet == nil || *clone3.ErrnoRet != 38 {
		t.Errorf("clone3 rule %+v, want SCMP_ACT_ERRNO with ENOSYS so libc falls back to clone", clone3)
	}
}

func TestRuntimeDefaultCapabilitiesOpenTheirGroups(t *testing.T) {
	for _, tc := range []struct {
		caps  []string
		opens []string
	}{
		{[]string{"CAP_SYS_ADMIN"}, []string{"mount", "umount2", "pivot_root", "setns", "unshare", "clone", "clone3", "bpf", "perf_event_open"}},
		{[]string{"sys_ptrace"}, []string{"ptrace", "process_vm_readv", "userfaultfd"}},
		{[]string{"SYS_TIME"}, []string{"clock_settime", "settimeofday"}},
		{[]string{"CAP_BPF"}, []string{"bpf"}},
		{[]string{"CAP_SYS_MODULE"}, []string{"init_module", "finit_module"}},
		{[]string{"CAP_SYS_BOOT"}, []string{"reboot", "kexec_load"}},
		{[]string{"CAP_DAC_READ_SEARCH"}, []string{"open_by_handle_at"}},
	} {
		p := RuntimeDefault(tc.caps)
		for _, name := range tc.opens {
			if !allowedUnconditionally(p, name) {
				t.Errorf("caps %v: %s not allowed", tc.caps, name)
			}
		}
	}
	// No capability opens the keyrings.
	p := RuntimeDefault(allCapabilities)
	for _, name := range []string{"keyctl", "add_key", "request_key", "modify_ldt", "vm86"} {
		if mentioned(p, name) {
			t.Errorf("%s allowed with every capability", name)
		}
	}
}

func TestRuntimeDefaultReturnsAFreshProfile(t *testing.T) {
	a := RuntimeDefault(nil)
	a.Syscalls[0].Names[0] = "changed"
	b := RuntimeDefault(nil)
	if b.Syscalls[0].Names[0] == "changed" {
		t.Fatal("a change to one returned profile shows in the next")
	}
}
