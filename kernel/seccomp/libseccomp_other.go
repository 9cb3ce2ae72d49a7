//go:build !linux || !cgo

package seccomp

import specs "github.com/opencontainers/runtime-spec/specs-go"

// Probe reports ErrUnsupported without libseccomp.
func Probe() (Support, error) { return Support{}, ErrUnsupported }

// NativeArch reports ErrUnsupported without libseccomp.
func NativeArch() (specs.Arch, error) { return "", ErrUnsupported }

// LookupSyscall reports ErrUnsupported without libseccomp.
func LookupSyscall(specs.Arch, string) (Lookup, error) { return Lookup{}, ErrUnsupported }

// Filter stands in for a libseccomp filter where there is none.
type Filter struct{}

// Build reports ErrUnsupported without libseccomp.
func Build(*specs.LinuxSeccomp) (*Filter, error) { return nil, ErrUnsupported }

// Release does nothing.
func (*Filter) Release() {}

// Skipped is zero.
func (*Filter) Skipped() int { return 0 }

// Instructions reports ErrUnsupported without libseccomp.
func (*Filter) Instructions() (int, error) { return 0, ErrUnsupported }

// LoadIntoThisProcess reports ErrUnsupported without libseccomp.
func (*Filter) LoadIntoThisProcess() error { return ErrUnsupported }
