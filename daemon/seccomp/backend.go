package seccomp

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	kseccomp "github.com/plinth/plinth/kernel/seccomp"
)

// Backend is what validation asks of libseccomp. Libseccomp is the real one; tests of
// the error paths that libseccomp cannot be made to take (an old library, a refused
// compile) use a fake.
type Backend interface {
	// Support reports the library version and API level.
	Support() (kseccomp.Support, error)
	// NativeArch is the node's architecture, which every filter includes.
	NativeArch() (specs.Arch, error)
	// LookupSyscall resolves a name on one architecture.
	LookupSyscall(arch specs.Arch, name string) (kseccomp.Lookup, error)
	// Compile builds the filter as runc would and generates its BPF program, returning
	// the program's length in instructions. Errors about one rule are *kseccomp.RuleError.
	Compile(p *specs.LinuxSeccomp) (instructions int, err error)
}

// Libseccomp is the Backend over the linked libseccomp (kernel/seccomp).
type Libseccomp struct{}

var _ Backend = Libseccomp{}

// Support implements Backend.
func (Libseccomp) Support() (kseccomp.Support, error) { return kseccomp.Probe() }

// NativeArch implements Backend.
func (Libseccomp) NativeArch() (specs.Arch, error) { return kseccomp.NativeArch() }

// LookupSyscall implements Backend.
func (Libseccomp) LookupSyscall(arch specs.Arch, name string) (kseccomp.Lookup, error) {
	return kseccomp.LookupSyscall(arch, name)
}

// Compile implements Backend.
func (Libseccomp) Compile(p *specs.LinuxSeccomp) (int, error) {
	f, err := kseccomp.Build(p)
	if err != nil {
		return 0, err
	}
	defer f.Release()
	return f.Instructions()
}
