package pods

import (
	"context"
	"errors"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pods/bundle"
)

// ImageRequest asks for one container's image.
type ImageRequest struct {
	// Ref is the container's image field as written ("busybox", "reg:5000/app@sha256:…").
	Ref        string
	PullPolicy corev1.PullPolicy
	// PullSecrets are the pod's imagePullSecrets, read from the API by the caller
	// (kubernetes.io/dockerconfigjson or dockercfg).
	PullSecrets []corev1.Secret
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

// ErrImageNeverPull is what ImageService wraps when the policy is Never and the image
// is not present: the container waits with reason ErrImageNeverPull, not a pull error.
var ErrImageNeverPull = errors.New("image is not present and the pull policy is Never")

// ImageService is what the pods lifecycle needs from daemon/images.
type ImageService interface {
	// EnsureImage makes the image present as the pull policy says (pulling with the
	// secrets when needed) and returns it. Errors become ErrImagePull (then
	// ImagePullBackOff); wrap ErrImageNeverPull for a missing image under Never.
	EnsureImage(ctx context.Context, req ImageRequest) (Image, error)
	// PrepareRootfs makes dir (empty, created by the caller) the root filesystem of a
	// new container of imageID: an overlay mount or a copy, writable unless the
	// container asks for a read-only root (the runtime mounts that read-only itself).
	PrepareRootfs(ctx context.Context, imageID, dir string) error
	// ReleaseRootfs undoes PrepareRootfs (unmounts, removes the upper layer); it is
	// idempotent.
	ReleaseRootfs(ctx context.Context, dir string) error
}

// PodNetworkStatus is a pod's network, once set up.
type PodNetworkStatus struct {
	// NetNSPath is the pod's network namespace (a bind-mounted nsfs file).
	NetNSPath string
	// IPs are the pod's addresses, primary first.
	IPs []string
}

// PodNetwork is what the pods lifecycle needs from daemon/podnet. hostNetwork pods
// never reach it.
type PodNetwork interface {
	// Setup creates (or finds, after a restart) the pod's network namespace, its veth
	// into the node's bridge, its address from the node's podCIDR and its default
	// route. Idempotent.
	Setup(ctx context.Context, pod *corev1.Pod) (PodNetworkStatus, error)
	// Teardown removes the pod's network and releases its addresses. Idempotent.
	Teardown(ctx context.Context, pod *corev1.Pod) error
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
