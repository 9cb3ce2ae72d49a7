package images

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// ParseReference parses an image reference as the container runtime does: a missing
// registry means Docker Hub (and library/ for a single-component name), a missing tag
// means latest.
func ParseReference(image string) (name.Reference, error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return nil, &PullError{Image: image, Reason: ErrInvalidImageName, Err: err}
	}
	return ref, nil
}

// DefaultPullPolicy is the API server's default for a container's imagePullPolicy:
// Always when the image has the tag latest or no tag and no digest, IfNotPresent
// otherwise.
func DefaultPullPolicy(image string) corev1.PullPolicy {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	if tag, ok := ref.(name.Tag); ok && tag.TagStr() == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// PullDecision is what to do about an image before starting a container.
type PullDecision int

const (
	// UseLocal: run the image on the node without asking the registry.
	UseLocal PullDecision = iota
	// Pull: fetch the image (for Always, the registry's manifest decides whether any
	// blob is downloaded).
	Pull
	// FailNeverPull: the policy forbids pulling and the image is missing.
	FailNeverPull
)

func (d PullDecision) String() string {
	switch d {
	case UseLocal:
		return "UseLocal"
	case Pull:
		return "Pull"
	case FailNeverPull:
		return "FailNeverPull"
	}
	return fmt.Sprintf("PullDecision(%d)", int(d))
}

// DecidePull applies imagePullPolicy (empty means DefaultPullPolicy) to whether the
// image is present on the node. An unknown policy is an error naming it.
func DecidePull(image string, policy corev1.PullPolicy, present bool) (PullDecision, error) {
	if policy == "" {
		policy = DefaultPullPolicy(image)
	}
	switch policy {
	case corev1.PullAlways:
		return Pull, nil
	case corev1.PullIfNotPresent:
		if present {
			return UseLocal, nil
		}
		return Pull, nil
	case corev1.PullNever:
		if present {
			return UseLocal, nil
		}
		return FailNeverPull, nil
	}
	return 0, fmt.Errorf("field imagePullPolicy: %q is not Always, IfNotPresent or Never", policy)
}
