package seccomp

import (
	"errors"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	kseccomp "github.com/plinth/plinth/kernel/seccomp"
)

// fakeBackend stands in for libseccomp where a test needs what the linked library
// cannot be made to do: an older API level, or a refused compile.
type fakeBackend struct {
	api        uint
	known      map[string]bool
	compileErr error
	compiles   *int
}

func (f fakeBackend) Support() (kseccomp.Support, error) {
	return kseccomp.Support{Major: 2, Minor: 3, Micro: 1, API: f.api}, nil
}
func (fakeBackend) NativeArch() (specs.Arch, error) { return specs.ArchX86_64, nil }
func (f fakeBackend) LookupSyscall(_ specs.Arch, name string) (kseccomp.Lookup, error) {
	if f.known[name] {
		return kseccomp.Lookup{Known: true, OnArch: true, Number: 1}, nil
	}
	return kseccomp.Lookup{}, nil
}
func (f fakeBackend) Compile(*specs.LinuxSeccomp) (int, error) {
	if f.compiles != nil {
		*f.compiles++
	}
	return 7, f.compileErr
}

func mustParse(t *testing.T, doc string) *specs.LinuxSeccomp {
	t.Helper()
	p, err := Parse("p.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantProfileError(t *testing.T, err error, path, value, reason string) {
	t.Helper()
	var pe *ProfileError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ProfileError", err)
	}
	if pe.Path != path || pe.Value != value || !strings.Contains(pe.Error(), reason) {
		t.Errorf("got %s\nwant path %q value %q reason containing %q", pe, path, value, reason)
	}
}

func TestValidateUnknownSyscallNamesEveryArchitecture(t *testing.T) {
	requireLibseccomp(t)
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_AARCH64"],
		"syscalls":[{"names":["getpid"],"action":"SCMP_ACT_LOG"},{"names":["mkdir","mkdri"],"action":"SCMP_ACT_ERRNO"}]}`)
	_, err := Validate(Libseccomp{}, "p.json", p)
	wantProfileError(t, err, "syscalls[1].names[1]", `"mkdri"`, "unknown syscall on SCMP_ARCH_X86_64, SCMP_ARCH_AARCH64")
}

// A name that exists only on architectures the profile does not cover is allowed (it is
// how multi-architecture profiles are written) but reported.
func TestValidateWarnsAboutSyscallsNoCoveredArchitectureHas(t *testing.T) {
	requireLibseccomp(t)
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],
		"syscalls":[{"names":["mkdir","socketcall"],"action":"SCMP_ACT_ERRNO"}]}`)
	s, err := Validate(Libseccomp{}, "p.json", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], `syscalls[0].names[1]: "socketcall" does not exist on SCMP_ARCH_X86_64`) {
		t.Errorf("warnings %q", s.Warnings)
	}
	// Covering x86, where socketcall exists, silences it.
	p.Architectures = append(p.Architectures, specs.ArchX86)
	s, err = Validate(Libseccomp{}, "p.json", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q", s.Warnings)
	}
}

func TestValidateAcceptsEveryActionTheNodeSupports(t *testing.T) {
	requireLibseccomp(t)
	sup, err := kseccomp.Probe()
	if err != nil {
		t.Fatal(err)
	}
	if sup.API < 6 {
		t.Fatalf("%s: this test expects API level 6 or more, as libseccomp 2.5.4 on Linux 6.x gives", sup)
	}
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1,"listenerPath":"/run/agent.sock",
		"architectures":["SCMP_ARCH_X86_64","SCMP_ARCH_X86","SCMP_ARCH_X32"],
		"flags":["SECCOMP_FILTER_FLAG_TSYNC","SECCOMP_FILTER_FLAG_LOG","SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
		"syscalls":[
			{"names":["read","write","exit_group"],"action":"SCMP_ACT_ALLOW"},
			{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":13},
			{"names":["rmdir"],"action":"SCMP_ACT_ERRNO"},
			{"names":["getpid"],"action":"SCMP_ACT_TRACE","errnoRet":1},
			{"names":["openat"],"action":"SCMP_ACT_NOTIFY"},
			{"names":["kill"],"action":"SCMP_ACT_LOG"},
			{"names":["ptrace"],"action":"SCMP_ACT_KILL_PROCESS"},
			{"names":["reboot"],"action":"SCMP_ACT_KILL_THREAD"},
			{"names":["kexec_load"],"action":"SCMP_ACT_KILL"},
			{"names":["swapon"],"action":"SCMP_ACT_TRAP"},
			{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"},{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]},
			{"names":["mmap"],"action":"SCMP_ACT_ALLOW","args":[{"index":2,"value":4,"op":"SCMP_CMP_MASKED_EQ","valueTwo":0},{"index":3,"value":1,"op":"SCMP_CMP_GE"}]},
			{"names":["getppid"],"action":"SCMP_ACT_ERRNO","errnoRet":1}
		]}`)
	s, err := Validate(Libseccomp{}, "p.json", p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rules != 13 || s.Names != 15 || s.Instructions == 0 || len(s.Architectures) != 3 {
		t.Errorf("summary %s", s)
	}
	if !strings.HasPrefix(s.String(), "default action SCMP_ACT_ERRNO(1), 13 rules for 15 syscall names, architectures SCMP_ARCH_X86_64 SCMP_ARCH_X86 SCMP_ARCH_X32, ") {
		t.Errorf("summary line %q", s)
	}
}

func TestValidateRefusesWhatTheNodeCannotDo(t *testing.T) {
	old := fakeBackend{api: 2, known: map[string]bool{"mkdir": true}}
	for _, tc := range []struct {
		name, doc, path, value, reason string
	}{
		{"default action", `{"defaultAction":"SCMP_ACT_KILL_PROCESS"}`, "defaultAction", `"SCMP_ACT_KILL_PROCESS"`, "not supported on this node: needs libseccomp API level 3, this node has libseccomp 2.3.1, API level 2"},
		{"rule action", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_LOG"}]}`, "syscalls[0].action", `"SCMP_ACT_LOG"`, "needs libseccomp API level 3"},
		{"notify", `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/a","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_NOTIFY"}]}`, "syscalls[0].action", `"SCMP_ACT_NOTIFY"`, "needs libseccomp API level 6"},
		{"flag", `{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_TSYNC","SECCOMP_FILTER_FLAG_SPEC_ALLOW"]}`, "flags[1]", `"SECCOMP_FILTER_FLAG_SPEC_ALLOW"`, "needs libseccomp API level 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(old, "p.json", mustParse(t, tc.doc))
			wantProfileError(t, err, tc.path, tc.value, tc.reason)
		})
	}
}

// libseccomp 2.5.4 (bookworm's) lacks SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV; a newer
// library passes. Either way the answer must be right for the linked library.
func TestValidateWaitKillableFollowsTheLibrary(t *testing.T) {
	requireLibseccomp(t)
	sup, _ := kseccomp.Probe()
	_, err := Validate(Libseccomp{}, "p.json", mustParse(t, `{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]}`))
	if sup.API >= 7 {
		if err != nil {
			t.Fatalf("%s: %v", sup, err)
		}
		return
	}
	wantProfileError(t, err, "flags[0]", `"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"`, "needs libseccomp API level 7")
}

func TestValidateNamesTheRuleThatDoesNotCompile(t *testing.T) {
	b := fakeBackend{api: 6, known: map[string]bool{"mkdir": true, "rmdir": true},
		compileErr: &kseccomp.RuleError{Syscall: 1, Name: 0, Err: errors.New("libseccomp says no")}}
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO"},{"names":["rmdir"],"action":"SCMP_ACT_LOG"}]}`)
	_, err := Validate(b, "p.json", p)
	wantProfileError(t, err, "syscalls[1].names[0]", `"rmdir"`, "does not compile: libseccomp says no")

	b.compileErr = errors.New("whole filter refused")
	_, err = Validate(b, "p.json", p)
	wantProfileError(t, err, "", "", "does not compile: whole filter refused")
}

// Rules whose action is the default action are skipped (libseccomp refuses them), and
// two conditions on one argument become two rules, as runc compiles them.
func TestCompileFollowsRunc(t *testing.T) {
	requireLibseccomp(t)
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
		{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":1},
		{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"},{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`)
	f, err := kseccomp.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if f.Skipped() != 1 {
		t.Errorf("skipped %d rules, want the one equal to the default action", f.Skipped())
	}
	// ERRNO with another errno is a different action and is kept.
	p.Syscalls[0].ErrnoRet = new(uint(13))
	f2, err := kseccomp.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Release()
	if f2.Skipped() != 0 {
		t.Errorf("skipped %d rules, want none", f2.Skipped())
	}
}
