package seccomp

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// Choice is the seccomp profile a container is to run with, before any file is read.
type Choice struct {
	Type corev1.SeccompProfileType
	// LocalhostProfile is the profile's path relative to the profile root, for Localhost.
	LocalhostProfile string
	// From says where the choice came from, for messages: "container", "pod",
	// "privileged" or "default".
	From string
}

// Choose picks a container's seccomp profile type: a privileged container is always
// Unconfined; otherwise the container's securityContext.seccompProfile wins, then the
// pod's; with neither, RuntimeDefault when seccompDefault is set (kubelet's
// seccompDefault), else Unconfined. The seccomp annotations, deprecated and removed in
// Kubernetes, are not read. pod may be nil (a container outside any pod spec).
func Choose(pod *corev1.PodSpec, c *corev1.Container, privileged, seccompDefault bool) Choice {
	if privileged {
		return Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "privileged"}
	}
	pick := func(sp *corev1.SeccompProfile, from string) Choice {
		ch := Choice{Type: sp.Type, From: from}
		if sp.LocalhostProfile != nil {
			ch.LocalhostProfile = *sp.LocalhostProfile
		}
		return ch
	}
	if c != nil && c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		return pick(c.SecurityContext.SeccompProfile, "container")
	}
	if pod != nil && pod.SecurityContext != nil && pod.SecurityContext.SeccompProfile != nil {
		return pick(pod.SecurityContext.SeccompProfile, "pod")
	}
	if seccompDefault {
		return Choice{Type: corev1.SeccompProfileTypeRuntimeDefault, From: "default"}
	}
	return Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "default"}
}

// Config is how a node resolves profiles.
type Config struct {
	// Root is where Localhost profiles live; DefaultRoot when empty.
	Root string
	// SeccompDefault makes RuntimeDefault the profile of containers that name none, as
	// kubelet's seccompDefault does. Off by default, as in kubelet.
	SeccompDefault bool
}

// maxValidatedProfiles bounds the cache of validated Localhost profiles; a node uses a
// handful, and when more pass through the cache simply starts over.
const maxValidatedProfiles = 128

// Profiles resolves the seccomp profile of each container plinthd creates. It is safe
// for concurrent use.
type Profiles struct {
	root           string
	seccompDefault bool
	backend        Backend

	// validated remembers Localhost profiles that passed, by the SHA-256 of their
	// bytes: compiling one takes tens of milliseconds (most of it libseccomp generating
	// BPF for each architecture), too much to repeat for every container of every pod
	// when the file has not changed. Keyed by content, so an edit is seen at once.
	mu        sync.Mutex
	validated map[[sha256.Size]byte]*specs.LinuxSeccomp
}

// New returns Profiles checking Localhost profiles with the linked libseccomp.
func New(cfg Config) *Profiles { return NewWithBackend(cfg, Libseccomp{}) }

// NewWithBackend returns Profiles checking with b.
func NewWithBackend(cfg Config, b Backend) *Profiles {
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	return &Profiles{root: root, seccompDefault: cfg.SeccompDefault, backend: b,
		validated: map[[sha256.Size]byte]*specs.LinuxSeccomp{}}
}

// Root is the directory Localhost profiles are read from.
func (p *Profiles) Root() string { return p.root }

// ForContainer returns the seccomp section of the container's OCI config: nil for
// Unconfined, Plinth's RuntimeDefault adjusted to caps (the capabilities the container
// will hold, "CAP_SYS_ADMIN" or "SYS_ADMIN"), or the Localhost profile read, parsed and
// compiled from the profile root. The Localhost file is read on every call, so an
// edited profile applies to the next container created; a profile already validated
// with the same bytes is not compiled again. An error is a *ProfileError
// meant for the container's CreateContainerError message; it names the file and what
// is wrong with it.
func (p *Profiles) ForContainer(pod *corev1.PodSpec, c *corev1.Container, privileged bool, caps []string) (*specs.LinuxSeccomp, error) {
	ch := Choose(pod, c, privileged, p.seccompDefault)
	switch ch.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return nil, nil
	case corev1.SeccompProfileTypeRuntimeDefault:
		return RuntimeDefault(caps), nil
	case corev1.SeccompProfileTypeLocalhost:
		return p.localhost(ch.LocalhostProfile)
	}
	return nil, &ProfileError{
		File:   fmt.Sprintf("of the %s", ch.From),
		Path:   "securityContext.seccompProfile.type",
		Value:  quote(string(ch.Type)),
		Reason: "unknown type; want Unconfined, RuntimeDefault or Localhost",
	}
}

// localhost is LoadLocalhost with the cache of validated profiles; it returns a copy
// the caller may change.
func (p *Profiles) localhost(name string) (*specs.LinuxSeccomp, error) {
	data, err := readUnderRoot(p.root, name)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(data)
	p.mu.Lock()
	cached := p.validated[key]
	p.mu.Unlock()
	if cached != nil {
		return cloneProfile(cached), nil
	}
	prof, _, err := parseAndValidate(p.backend, filepath.Join(p.root, name), data)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.validated) >= maxValidatedProfiles {
		clear(p.validated)
	}
	p.validated[key] = prof
	p.mu.Unlock()
	return cloneProfile(prof), nil
}

// cloneProfile deep-copies a profile, so that no two containers share one.
func cloneProfile(in *specs.LinuxSeccomp) *specs.LinuxSeccomp {
	out := *in
	if in.DefaultErrnoRet != nil {
		out.DefaultErrnoRet = new(*in.DefaultErrnoRet)
	}
	out.Architectures = slices.Clone(in.Architectures)
	out.Flags = slices.Clone(in.Flags)
	if in.Syscalls != nil {
		out.Syscalls = make([]specs.LinuxSyscall, len(in.Syscalls))
		for i, sc := range in.Syscalls {
			sc.Names = slices.Clone(sc.Names)
			sc.Args = slices.Clone(sc.Args)
			if sc.ErrnoRet != nil {
				sc.ErrnoRet = new(*sc.ErrnoRet)
			}
			out.Syscalls[i] = sc
		}
	}
	return &out
}
