package seccomp

import (
	"errors"
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	kseccomp "github.com/plinth/plinth/kernel/seccomp"
)

// Summary describes a profile that passed validation.
type Summary struct {
	DefaultAction specs.LinuxSeccompAction
	// DefaultErrno is the errno of an ERRNO or TRACE default action (EPERM when the
	// profile sets none).
	DefaultErrno uint
	// Rules counts syscalls entries; Names the syscall names across them.
	Rules, Names int
	// Architectures are those the filter covers: the node's own first, then the
	// profile's others.
	Architectures []specs.Arch
	// Instructions is the length of the compiled BPF program.
	Instructions int
	// Library is the libseccomp that compiled it.
	Library kseccomp.Support
	// Warnings are things that are allowed but probably not meant, each naming its JSON
	// path: a syscall no covered architecture has, a listenerPath without NOTIFY.
	Warnings []string
}

// String is the one-line summary `plinthctl seccomp check` prints.
func (s *Summary) String() string {
	def := string(s.DefaultAction)
	if s.DefaultAction == specs.ActErrno || s.DefaultAction == specs.ActTrace {
		def = fmt.Sprintf("%s(%d)", def, s.DefaultErrno)
	}
	arches := make([]string, len(s.Architectures))
	for i, a := range s.Architectures {
		arches[i] = string(a)
	}
	return fmt.Sprintf("default action %s, %d rules for %d syscall names, architectures %s, %d BPF instructions (%s)",
		def, s.Rules, s.Names, strings.Join(arches, " "), s.Instructions, s.Library)
}

// Validate checks a parsed profile against libseccomp: every action and flag is
// supported by this library and kernel, every syscall name is known on at least one of
// the architectures the filter covers (the node's own and the profile's), and the
// profile compiles the way runc will compile it. Errors are *ProfileError naming file.
func Validate(b Backend, file string, p *specs.LinuxSeccomp) (*Summary, error) {
	e := func(path, value string, err error, format string, args ...any) error {
		return &ProfileError{File: file, Path: path, Value: value, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	sup, err := b.Support()
	if err != nil {
		return nil, e("", "", err, "cannot check it: libseccomp is unavailable")
	}
	native, err := b.NativeArch()
	if err != nil {
		return nil, e("", "", err, "cannot check it")
	}
	s := &Summary{DefaultAction: p.DefaultAction, Rules: len(p.Syscalls), Library: sup, DefaultErrno: 1}
	if p.DefaultErrnoRet != nil {
		s.DefaultErrno = *p.DefaultErrnoRet
	}
	s.Architectures = []specs.Arch{native}
	for _, a := range p.Architectures {
		if a != native {
			s.Architectures = append(s.Architectures, a)
		}
	}
	if err := sup.ActionSupported(p.DefaultAction); err != nil {
		return nil, e("defaultAction", quote(string(p.DefaultAction)), nil, "not supported on this node: %v", err)
	}
	for i, f := range p.Flags {
		if err := sup.FlagSupported(f); err != nil {
			return nil, e(indexed("flags", i), quote(string(f)), nil, "not supported on this node: %v", err)
		}
	}
	usesNotify := false
	for i, sc := range p.Syscalls {
		if err := sup.ActionSupported(sc.Action); err != nil {
			return nil, e(syscallPath(i)+".action", quote(string(sc.Action)), nil, "not supported on this node: %v", err)
		}
		usesNotify = usesNotify || sc.Action == specs.ActNotify
		for j, name := range sc.Names {
			s.Names++
			known, onSome := false, false
			for _, a := range s.Architectures {
				l, err := b.LookupSyscall(a, name)
				if err != nil {
					return nil, e(namePath(i, j), quote(name), err, "cannot look it up on %s", a)
				}
				known = known || l.Known
				onSome = onSome || l.OnArch
			}
			switch {
			case !known:
				return nil, e(namePath(i, j), quote(name), nil, "unknown syscall on %s (%s)", archList(s.Architectures), sup)
			case !onSome:
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %q does not exist on %s; the rule has no effect", namePath(i, j), name, archList(s.Architectures)))
			}
		}
	}
	if p.ListenerPath != "" && !usesNotify {
		s.Warnings = append(s.Warnings, "listenerPath: set, but no rule uses SCMP_ACT_NOTIFY; runc will not contact the agent")
	}
	n, err := b.Compile(p)
	if err != nil {
		var re *kseccomp.RuleError
		if errors.As(err, &re) && re.Syscall < len(p.Syscalls) && re.Name < len(p.Syscalls[re.Syscall].Names) {
			return nil, e(namePath(re.Syscall, re.Name), quote(p.Syscalls[re.Syscall].Names[re.Name]), re.Err, "does not compile")
		}
		return nil, e("", "", err, "does not compile")
	}
	s.Instructions = n
	return s, nil
}

func archList(arches []specs.Arch) string {
	s := make([]string, len(arches))
	for i, a := range arches {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}
