package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
)

// PullRequest asks for the image of one container.
type PullRequest struct {
	// Image is the container's image reference.
	Image string
	// PullPolicy is the container's imagePullPolicy; empty means DefaultPullPolicy.
	PullPolicy corev1.PullPolicy
	// PullSecrets are the pod's imagePullSecrets, read by the runtime from the API.
	PullSecrets []corev1.Secret
	// BackoffKey scopes the back-off after a failed pull. Kubelet keys it by pod and
	// image, so one pod's failures do not hold back another's; empty means the image.
	BackoffKey string
}

// puller runs pulls for a Store: one at a time per reference and set of credentials,
// with kubelet's back-off after failures.
type puller struct {
	store     *Store
	backoff   *pullBackoff
	flight    singleflight.Group
	transport http.RoundTripper // nil means remote's default
}

func newPuller(s *Store) *puller {
	return &puller{store: s, backoff: newPullBackoff(s.clock)}
}

// SetTransport sets the HTTP transport pulls use (the default honours proxy variables).
func (s *Store) SetTransport(rt http.RoundTripper) { s.puller.transport = rt }

// EnsureImage makes the container's image available on the node, as the pull policy
// says, and returns it. Errors are *PullError with one of the reasons ErrImagePull,
// ErrImagePullBackOff, ErrImageNeverPull or ErrInvalidImageName.
func (s *Store) EnsureImage(ctx context.Context, req PullRequest) (*Image, error) {
	ref, err := ParseReference(req.Image)
	if err != nil {
		return nil, err
	}
	present, err := s.lookupRecord(req.Image)
	if err != nil {
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: err}
	}
	decision, err := DecidePull(req.Image, req.PullPolicy, present != nil)
	if err != nil {
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: err}
	}
	switch decision {
	case UseLocal:
		im, err := s.withConfig(present)
		if err != nil {
			return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: err}
		}
		return im, nil
	case FailNeverPull:
		return nil, &PullError{Image: req.Image, Reason: ErrImageNeverPull,
			Err: errors.New("the image is not present on the node and imagePullPolicy is Never")}
	}

	backoffKey := req.BackoffKey
	if backoffKey == "" {
		backoffKey = ref.Name()
	}
	if waiting, until, lastErr := s.puller.backoff.inBackoff(backoffKey); waiting {
		return nil, &PullError{Image: req.Image, Reason: ErrImagePullBackOff,
			Err: fmt.Errorf("back-off pulling image until %s: last pull: %v", until.UTC().Format(time.RFC3339), lastErr)}
	}
	keychain, err := KeychainFromSecrets(req.PullSecrets)
	if err != nil {
		s.puller.backoff.failed(backoffKey, err)
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: err}
	}
	// Concurrent pulls of one reference with the same secrets share one download; with
	// different secrets they run apart, as one pod's credentials must not serve another.
	// The shared pull outlives any one caller's context (another caller may still want
	// it); each caller stops waiting when its own context ends.
	ch := s.puller.flight.DoChan(ref.Name()+"\x00"+secretsFingerprint(req.PullSecrets), func() (any, error) {
		start := s.clock.Now()
		rec, downloaded, err := s.pull(context.WithoutCancel(ctx), ref, keychain)
		var size int64
		if rec != nil {
			size = rec.Size
		}
		s.metrics.observePull(err, downloaded, size, s.clock.Since(start))
		return rec, err
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		// Not the image's fault: no back-off.
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: ctx.Err()}
	}
	if res.Err != nil {
		s.puller.backoff.failed(backoffKey, res.Err)
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: res.Err}
	}
	v := res.Val
	s.puller.backoff.succeeded(backoffKey)
	im, err := s.withConfig(v.(*Record))
	if err != nil {
		return nil, &PullError{Image: req.Image, Reason: ErrImagePull, Err: err}
	}
	return im, nil
}

// pull fetches ref's manifest (resolving an index to linux/GOARCH) and downloads only
// what the store lacks: when the manifest digest is one the store already has, no blob
// is fetched and the record just gains the name (downloaded is then false).
func (s *Store) pull(ctx context.Context, ref name.Reference, keychain authn.Keychain) (rec *Record, downloaded bool, err error) {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
	}
	if s.puller.transport != nil {
		opts = append(opts, remote.WithTransport(s.puller.transport))
	}
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, false, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, false, err
	}
	if d, ok := ref.(name.Digest); ok && d.DigestStr() != digest.String() {
		return nil, false, fmt.Errorf("registry served manifest %s for %s", digest, ref)
	}
	repoDigest := ref.Context().Digest(digest.String()).Name()
	var repoTags []string
	if _, ok := ref.(name.Tag); ok {
		repoTags = []string{ref.Name()}
	}
	if known, err := s.refreshKnown(repoDigest, repoTags); err != nil || known != nil {
		return known, false, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return nil, false, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, false, fmt.Errorf("config %s: %w", cfgName, err)
	}
	if cfg.OS != "" && cfg.OS != "linux" || cfg.Architecture != "" && cfg.Architecture != runtime.GOARCH {
		return nil, false, fmt.Errorf("image is for %s/%s, this node is linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	rec, err = s.storeImage(ctx, img, repoTags, []string{repoDigest})
	return rec, err == nil, err
}

// refreshKnown finds the image with this repository digest and, if its layers are all
// there, gives it the tags and a new pull time.
func (s *Store) refreshKnown(repoDigest string, repoTags []string) (*Record, error) {
	recs, err := s.records()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if !slices.Contains(r.RepoDigests, repoDigest) || !s.layersPresent(r) {
			continue
		}
		r.RepoTags = union(r.RepoTags, repoTags)
		r.PulledAt = s.clock.Now()
		if err := s.commitRecord(r); err != nil {
			if errors.Is(err, errLayersGone) {
				return nil, nil // pull it again
			}
			return nil, err
		}
		return r, nil
	}
	return nil, nil
}

// secretsFingerprint identifies a set of pull secrets by content, for singleflight keys.
func secretsFingerprint(secrets []corev1.Secret) string {
	if len(secrets) == 0 {
		return ""
	}
	h := sha256.New()
	for _, s := range secrets {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(h, "%s\x00%d\x00", s.Type, len(keys))
		for _, k := range keys {
			fmt.Fprintf(h, "%s\x00%d\x00", k, len(s.Data[k]))
			h.Write(s.Data[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
