//go:build linux && cgo

package seccomp

import (
	"errors"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestProbe(t *testing.T) {
	s, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	if s.Major < 2 || (s.Major == 2 && s.Minor < 5) {
		t.Errorf("%s: Plinth needs libseccomp 2.5 or newer", s)
	}
	if s.API < 3 {
		t.Errorf("%s: API level below 3 on a 6.x kernel", s)
	}
	if err := s.ActionSupported(specs.ActKillProcess); err != nil {
		t.Errorf("KILL_PROCESS: %v", err)
	}
	if err := (Support{API: 2}).ActionSupported(specs.ActLog); err == nil || !strings.Contains(err.Error(), "needs libseccomp API level 3") {
		t.Errorf("LOG at API 2: %v", err)
	}
	if err := s.ActionSupported("SCMP_ACT_NOPE"); err == nil {
		t.Error("unknown action accepted")
	}
}

func TestLookupSyscall(t *testing.T) {
	for _, tc := range []struct {
		arch specs.Arch
		name string
		want Lookup
	}{
		{specs.ArchX86_64, "mkdir", Lookup{Known: true, OnArch: true, Number: 83}},
		{specs.ArchX86, "mkdir", Lookup{Known: true, OnArch: true, Number: 39}},
		{specs.ArchAARCH64, "mkdirat", Lookup{Known: true, OnArch: true, Number: 34}},
		{specs.ArchAARCH64, "mkdir", Lookup{Known: true}},
		{specs.ArchX86_64, "socketcall", Lookup{Known: true}},
		{specs.ArchX86_64, "mkdri", Lookup{}},
	} {
		got, err := LookupSyscall(tc.arch, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("%s on %s: %+v, %v; want %+v", tc.name, tc.arch, got, err, tc.want)
		}
	}
	if _, err := LookupSyscall("SCMP_ARCH_VAX", "mkdir"); err == nil {
		t.Error("unknown architecture accepted")
	}
	// Every architecture of the runtime spec maps to one libseccomp knows.
	for a := range archNames {
		if _, err := LookupSyscall(a, "read"); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

func TestNativeArch(t *testing.T) {
	a, err := NativeArch()
	if err != nil {
		t.Fatal(err)
	}
	if !KnownArch(a) {
		t.Errorf("native %q", a)
	}
}

func TestBuild(t *testing.T) {
	p := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchAARCH64},
		Flags:         []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagLog},
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno},
			{Names: []string{"getpid"}, Action: specs.ActAllow},
		},
	}
	f, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	n, err := f.Instructions()
	if err != nil || n == 0 {
		t.Fatalf("instructions %d, %v", n, err)
	}
	if f.Skipped() != 1 {
		t.Errorf("skipped %d, want getpid's ALLOW rule under an ALLOW default", f.Skipped())
	}

	for _, tc := range []struct {
		name   string
		change func(p *specs.LinuxSeccomp)
		rule   *RuleError
		text   string
	}{
		{"unknown name", func(p *specs.LinuxSeccomp) { p.Syscalls[0].Names[1] = "mkdri" }, &RuleError{Syscall: 0, Name: 1}, `unknown syscall "mkdri"`},
		{"notify on write", func(p *specs.LinuxSeccomp) {
			p.Syscalls[1] = specs.LinuxSyscall{Names: []string{"read", "write"}, Action: specs.ActNotify}
		}, &RuleError{Syscall: 1, Name: 1}, "cannot be used for write"},
		{"notify default", func(p *specs.LinuxSeccomp) { p.DefaultAction = specs.ActNotify }, nil, "cannot be the default action"},
		{"unknown arch", func(p *specs.LinuxSeccomp) { p.Architectures[1] = "SCMP_ARCH_VAX" }, nil, "architectures[1]"},
		{"unknown flag", func(p *specs.LinuxSeccomp) { p.Flags[0] = "SECCOMP_FILTER_FLAG_NOPE" }, nil, "flags[0]"},
		{"argument index", func(p *specs.LinuxSeccomp) {
			p.Syscalls[0].Args = []specs.LinuxSeccompArg{{Index: 6, Value: 1, Op: specs.OpEqualTo}}
		}, nil, "syscalls[0].args"},
	} {
		q := &specs.LinuxSeccomp{DefaultAction: p.DefaultAction, Architectures: append([]specs.Arch(nil), p.Architectures...),
			Flags: append([]specs.LinuxSeccompFlag(nil), p.Flags...)}
		for _, sc := range p.Syscalls {
			sc.Names = append([]string(nil), sc.Names...)
			q.Syscalls = append(q.Syscalls, sc)
		}
		tc.change(q)
		f, err := Build(q)
		if err == nil {
			f.Release()
			t.Errorf("%s: built", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.text)
		}
		var re *RuleError
		if tc.rule != nil && (!errors.As(err, &re) || re.Syscall != tc.rule.Syscall || re.Name != tc.rule.Name) {
			t.Errorf("%s: %v, want a RuleError at syscalls[%d].names[%d]", tc.name, err, tc.rule.Syscall, tc.rule.Name)
		}
	}
}
