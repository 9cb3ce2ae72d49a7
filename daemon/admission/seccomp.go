package admission

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// ContainerProfiles resolves a container's seccomp profile; *seccomp.Profiles of
// daemon/seccomp satisfies it (its ForContainer reads, parses and compiles a Localhost
// profile and returns a *seccomp.ProfileError naming the file and the problem).
type ContainerProfiles interface {
	ForContainer(pod *corev1.PodSpec, c *corev1.Container, privileged bool, caps []string) (*specs.LinuxSeccomp, error)
}

// SeccompCheck refuses a pod when the seccomp profile of any of its containers (init,
// then app, then ephemeral) cannot be used, reason InvalidSeccompProfile and a message
// naming the container and the profile's problem. Refusing at admission rather than
// at container creation keeps a pod with a broken profile from starting some of its
// containers and not others.
type SeccompCheck struct {
	Profiles ContainerProfiles
}

// Admit implements Handler.
func (s SeccompCheck) Admit(in *Input) Result {
	spec := &in.Pod.Spec
	check := func(kind string, c *corev1.Container) *Result {
		if _, err := s.Profiles.ForContainer(spec, c, isPrivileged(c), addedCapabilities(c)); err != nil {
			r := refuse(ReasonInvalidSeccompProfile, fmt.Sprintf("%s %q: %v", kind, c.Name, err))
			return &r
		}
		return nil
	}
	for i := range spec.InitContainers {
		if r := check("init container", &spec.InitContainers[i]); r != nil {
			return *r
		}
	}
	for i := range spec.Containers {
		if r := check("container", &spec.Containers[i]); r != nil {
			return *r
		}
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		if r := check("ephemeral container", &c); r != nil {
			return *r
		}
	}
	return admitted
}

func isPrivileged(c *corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// addedCapabilities are the capabilities the container adds; they only shape the
// RuntimeDefault profile, which cannot fail, so the exact effective set does not
// matter for admission.
func addedCapabilities(c *corev1.Container) []string {
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
		return nil
	}
	out := make([]string, 0, len(c.SecurityContext.Capabilities.Add))
	for _, capability := range c.SecurityContext.Capabilities.Add {
		out = append(out, string(capability))
	}
	return out
}
