package seccomp

import (
	"fmt"

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

// Profiles resolves the seccomp profile of each container plinthd creates.
type Profiles struct {
	root           string
	seccompDefault bool
	backend        Backend
}

// New returns Profiles checking Localhost profiles with the linked libseccomp.
func New(cfg Config) *Profiles { return NewWithBackend(cfg, Libseccomp{}) }

// NewWithBackend returns Profiles checking with b.
func NewWithBackend(cfg Config, b Backend) *Profiles {
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	return &Profiles{root: root, seccompDefault: cfg.SeccompDefault, backend: b}
}

// Root is the directory Localhost profiles are read from.
func (p *Profiles) Root() string { return p.root }

// ForContainer returns the seccomp section of the container's OCI config: nil for
// Unconfined, Plinth's RuntimeDefault adjusted to caps (the capabilities the container
// will hold, "CAP_SYS_ADMIN" or "SYS_ADMIN"), or the Localhost profile read, parsed and
// compiled from the profile root. The Localhost file is read on every call, so an
// edited profile applies to the next container created. An error is a *ProfileError
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
		prof, _, err := LoadLocalhost(p.backend, p.root, ch.LocalhostProfile)
		return prof, err
	}
	return nil, &ProfileError{
		File:   fmt.Sprintf("of the %s", ch.From),
		Path:   "securityContext.seccompProfile.type",
		Value:  quote(string(ch.Type)),
		Reason: "unknown type; want Unconfined, RuntimeDefault or Localhost",
	}
}
