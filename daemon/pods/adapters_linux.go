//go:build linux

package pods

import (
	"context"
	"net/netip"

	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/podnet"
	"github.com/plinth/plinth/daemon/pods/bundle"
)

// StoreImages is daemon/images' Store as the lifecycle's ImageService.
type StoreImages struct{ Store *images.Store }

var _ ImageService = StoreImages{}

// EnsureImage implements ImageService: the Store's pull, with its error's kubelet
// reason carried in an ImagePullError.
func (s StoreImages) EnsureImage(ctx context.Context, req ImageRequest) (Image, error) {
	im, err := s.Store.EnsureImage(ctx, images.PullRequest{Image: req.Image, PullPolicy: req.PullPolicy,
		PullSecrets: req.PullSecrets, BackoffKey: req.BackoffKey})
	if err != nil {
		return Image{}, &ImagePullError{Reason: images.Reason(err), Err: err}
	}
	out := Image{ID: im.ID}
	if im.Config != nil {
		c := im.Config.Config
		out.Config = bundle.ImageConfig{Entrypoint: c.Entrypoint, Cmd: c.Cmd, Env: c.Env, WorkingDir: c.WorkingDir, User: c.User}
		out.StopSignal = c.StopSignal
	}
	return out, nil
}

// PrepareRootFS implements ImageService.
func (s StoreImages) PrepareRootFS(containerID, imageID, containerDir string) (string, error) {
	return s.Store.PrepareRootFS(containerID, imageID, containerDir)
}

// RemoveRootFS implements ImageService.
func (s StoreImages) RemoveRootFS(containerDir string) error {
	return images.RemoveRootFS(containerDir)
}

// PodnetNetwork is daemon/podnet's Network as the lifecycle's PodNetwork.
type PodnetNetwork struct{ Network podnet.Network }

var _ PodNetwork = PodnetNetwork{}

// Setup implements PodNetwork, naming the namespace after the pod UID.
func (n PodnetNetwork) Setup(ctx context.Context, podUID string) (PodNetworkStatus, error) {
	a, err := n.Network.Setup(ctx, podUID, "")
	if err != nil {
		return PodNetworkStatus{}, err
	}
	return PodNetworkStatus{NetNSPath: a.NetNSPath, IPs: addrStrings(a.IPs)}, nil
}

// Teardown implements PodNetwork.
func (n PodnetNetwork) Teardown(ctx context.Context, podUID string) error {
	return n.Network.Teardown(ctx, podUID)
}

func addrStrings(as []netip.Addr) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}
