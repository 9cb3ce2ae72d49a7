// Package seccomp is plinthd's one door to libseccomp (through cgo and
// github.com/seccomp/libseccomp-golang): it resolves syscall names per architecture,
// reports what the library and the kernel support (API level, actions, filter flags),
// and builds a seccomp filter from an OCI runtime-spec LinuxSeccomp the way runc
// builds it, so a profile that compiles here compiles in runc (which links the same
// libseccomp on a node).
//
// The pure work on profiles (parsing, validation with JSON paths, the RuntimeDefault
// profile, resolution for a pod) is daemon/seccomp's; this package is kept apart so
// that only it needs cgo and libseccomp-dev, and daemon/seccomp's logic still builds
// and tests where cgo is off (where every function here returns ErrUnsupported).
//
// It owns the filters it builds (Filter.Release frees one). It touches the kernel only
// to probe the API level (seccomp(2) with harmless arguments, done by libseccomp) and
// when Filter.Load installs a filter on the calling process — which only a dedicated
// child process should do: a filter cannot be removed.
package seccomp
