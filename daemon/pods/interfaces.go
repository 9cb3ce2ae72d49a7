package pods

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pods/bundle"
)

// ImageRequest asks for one container's image.
type ImageRequest struct {
	// Image is the container's image field as written ("busybox", "reg:5000/app@sha256:…").
	Image      string
	PullPolicy corev1.PullPolicy
	// PullSecrets are the pod's imagePullSecrets, read from the API by the caller
	// (kubernetes.io/dockerconfigjson or dockercfg).
	PullSecrets []corev1.Secret
	// BackoffKey scopes pull backoff to the pod and image, as kubelet does.
	BackoffKey string
}

// Image is an image present on the node.
type Image struct {
	// ID is the content-addressed ID (the config digest, "sha256:…"), reported as the
	// container status's imageID.
	ID string
	// Config is how the image says to run it.
	Config bundle.ImageConfig
	// StopSignal is the image's STOPSIGNAL ("" means SIGTERM).
	StopSignal string
}

// ImagePullError is an image that cannot be had, with kubelet's reason for the
// container's waiting state: ErrImagePull, ImagePullBackOff, ErrImageNeverPull or
// InvalidImageName. Errors from EnsureImage that are not one count as ErrImagePull.
type ImagePullError struct {
	Reason string
	Err    error
}

func (e *ImagePullError) Error() string { return e.Err.Error() }
func (e *ImagePullError) Unwrap() error { return e.Err }

// ImageService is what the pods lifecycle needs from daemon/images (its Store, with
// EnsureImage's result and errors adapted; PrepareRootFS has the Store's signature).
type ImageService interface {
	// EnsureImage makes the image present as the pull policy says (pulling with the
	// secrets when needed) and returns it.
	EnsureImage(ctx context.Context, req ImageRequest) (Image, error)
	// PrepareRootFS makes containerDir/rootfs the root filesystem of container
	// containerID from imageID (an overlay mount or a copy) and returns its path. It is
	// idempotent.
	PrepareRootFS(containerID, imageID, containerDir string) (string, error)
	// RemoveRootFS undoes PrepareRootFS (unmounts, removes the upper layer); it is
	// idempotent.
	RemoveRootFS(containerDir string) error
}

// PodNetworkStatus is a pod's network, once set up.
type PodNetworkStatus struct {
	// NetNSPath is the pod's network namespace (a bind-mounted nsfs file).
	NetNSPath string
	// IPs are the pod's addresses, primary first.
	IPs []string
}

// PodNetwork is what the pods lifecycle needs from daemon/podnet (its Network, with
// Setup's Attachment adapted). hostNetwork pods never reach it.
type PodNetwork interface {
	// Setup creates (or finds, after a restart) the pod's network namespace, its veth
	// into the node's bridge, its address from the node's podCIDR and its default
	// route. Idempotent.
	Setup(ctx context.Context, podUID string) (PodNetworkStatus, error)
	// Teardown removes the pod's network and releases its addresses; a pod without
	// one is not an error.
	Teardown(ctx context.Context, podUID string) error
}

// SeccompResolver is what the pods lifecycle needs from daemon/seccomp (whose
// *Profiles implements it).
type SeccompResolver interface {
	// ForContainer returns the container's profile (the container's seccompProfile,
	// else the pod's; nil for Unconfined and for privileged containers; RuntimeDefault
	// adjusted to caps, the capabilities the container will hold) parsed and compiled
	// already. An error (missing file, path escaping the profile root, unknown syscall
	// or action, a profile that does not compile) fails the container with
	// CreateContainerError and the error's text, which names the file.
	ForContainer(pod *corev1.PodSpec, c *corev1.Container, privileged bool, caps []string) (*specs.LinuxSeccomp, error)
}
