package images

import (
	"errors"
	"fmt"
)

// The reasons kubelet reports in a waiting container's state when its image cannot be
// had. Every error EnsureImage returns wraps exactly one of them, so the runtime maps an
// error to a reason with Reason (or errors.Is).
var (
	// ErrImagePull: the pull was tried and failed (registry unreachable, unknown image,
	// wrong credentials, bad digest, no linux/<arch> image in the index).
	ErrImagePull = errors.New("ErrImagePull")
	// ErrImagePullBackOff: an earlier pull failed and the back-off period has not passed,
	// so no pull was tried.
	ErrImagePullBackOff = errors.New("ImagePullBackOff")
	// ErrImageNeverPull: imagePullPolicy is Never and the image is not on the node.
	ErrImageNeverPull = errors.New("ErrImageNeverPull")
	// ErrInvalidImageName: the image reference does not parse.
	ErrInvalidImageName = errors.New("InvalidImageName")
)

// PullError says why an image is not available: Reason is one of the sentinel errors
// above, Err the underlying cause (nil for a back-off).
type PullError struct {
	Image  string
	Reason error
	Err    error
}

func (e *PullError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: image %q", e.Reason, e.Image)
	}
	return fmt.Sprintf("%s: image %q: %v", e.Reason, e.Image, e.Err)
}

// Unwrap makes errors.Is match both the reason and the cause.
func (e *PullError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// Reason returns the kubelet reason string for an error from EnsureImage
// ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"), or ""
// when err is nil or not a pull error.
func Reason(err error) string {
	for _, r := range []error{ErrImagePullBackOff, ErrImageNeverPull, ErrInvalidImageName, ErrImagePull} {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return ""
}
