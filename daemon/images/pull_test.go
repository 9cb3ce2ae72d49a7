package images

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

func TestPullAnonymousThenIfNotPresentHitsTheStore(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.PushBusybox(t, "test/busybox:v1", "/bin/sh", "-c", "echo hello")
	s, _ := newTestStore(t, RootFSCopy)
	ctx := context.Background()

	im, err := s.EnsureImage(ctx, PullRequest{Image: ref})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(im.Config.Config.Entrypoint, " "); got != "/bin/sh -c echo hello" {
		t.Fatalf("entrypoint %q", got)
	}
	if len(im.RepoTags) != 1 || im.RepoTags[0] != ref || len(im.RepoDigests) != 1 {
		t.Fatalf("names %v %v", im.RepoTags, im.RepoDigests)
	}
	blobs, manifests := reg.BlobGets.Load(), reg.ManifestGets.Load()
	if blobs == 0 {
		t.Fatal("the pull fetched no blob")
	}

	// IfNotPresent (the default for v1) does not ask the registry at all.
	again, err := s.EnsureImage(ctx, PullRequest{Image: ref})
	if err != nil || again.ID != im.ID {
		t.Fatalf("second EnsureImage = %v, %v", again, err)
	}
	if reg.ManifestGets.Load() != manifests || reg.BlobGets.Load() != blobs {
		t.Fatal("IfNotPresent with the image present talked to the registry")
	}
	// Always asks for the manifest only: the digest is known, nothing is downloaded.
	if _, err := s.EnsureImage(ctx, PullRequest{Image: ref, PullPolicy: corev1.PullAlways}); err != nil {
		t.Fatal(err)
	}
	if reg.ManifestGets.Load() == manifests || reg.BlobGets.Load() != blobs {
		t.Fatalf("Always re-pull: manifests %d->%d, blobs %d->%d; want a manifest check and no blob",
			manifests, reg.ManifestGets.Load(), blobs, reg.BlobGets.Load())
	}
	// By digest, from the store.
	byDigest, err := s.EnsureImage(ctx, PullRequest{Image: im.RepoDigests[0], PullPolicy: corev1.PullNever})
	if err != nil || byDigest.ID != im.ID {
		t.Fatalf("by digest: %v, %v", byDigest, err)
	}
}

func TestPullWithDockerConfigJSONSecret(t *testing.T) {
	reg := imagetest.NewRegistry(t, imagetest.WithBasicAuth("puller", "s3cret"))
	ref := reg.PushBusybox(t, "private/app:v1", "/bin/true")
	s, _ := newTestStore(t, RootFSCopy)
	ctx := context.Background()

	_, err := s.EnsureImage(ctx, PullRequest{Image: ref, BackoffKey: "anonymous"})
	if !errors.Is(err, ErrImagePull) {
		t.Fatalf("anonymous pull of a private image: %v, want ErrImagePull", err)
	}
	wrong := dockerConfigSecret("wrong", reg.Host, "puller", "nope")
	_, err = s.EnsureImage(ctx, PullRequest{Image: ref, PullSecrets: []corev1.Secret{wrong}, BackoffKey: "wrong"})
	var pe *PullError
	if !errors.As(err, &pe) || Reason(err) != "ErrImagePull" || !strings.Contains(err.Error(), ref) {
		t.Fatalf("wrong credentials: %v, want a PullError ErrImagePull naming the image", err)
	}
	right := dockerConfigSecret("right", reg.Host, "puller", "s3cret")
	im, err := s.EnsureImage(ctx, PullRequest{Image: ref, PullSecrets: []corev1.Secret{wrong, right}[1:], BackoffKey: "right"})
	if err != nil {
		t.Fatalf("pull with the right secret: %v", err)
	}
	if im.Config.Config.Entrypoint[0] != "/bin/true" {
		t.Fatalf("entrypoint %v", im.Config.Config.Entrypoint)
	}
}

func TestPullFailureBacksOffOnTheClock(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Host + "/missing/image:v1"
	s, clk := newTestStore(t, RootFSCopy)
	ctx := context.Background()
	req := PullRequest{Image: ref, BackoffKey: "pod-uid/" + ref}

	if _, err := s.EnsureImage(ctx, req); Reason(err) != "ErrImagePull" {
		t.Fatalf("first pull of a missing image: %v", err)
	}
	gets := reg.ManifestGets.Load()
	_, err := s.EnsureImage(ctx, req)
	if Reason(err) != "ImagePullBackOff" || !strings.Contains(err.Error(), "manifests/v1") {
		t.Fatalf("retry within 10 s: %v; want ImagePullBackOff carrying the last error", err)
	}
	if reg.ManifestGets.Load() != gets {
		t.Fatal("a pull was tried during back-off")
	}
	clk.Step(10 * time.Second)
	if _, err := s.EnsureImage(ctx, req); Reason(err) != "ErrImagePull" {
		t.Fatalf("after 10 s: %v, want a new attempt failing with ErrImagePull", err)
	}
	clk.Step(19 * time.Second)
	if _, err := s.EnsureImage(ctx, req); Reason(err) != "ImagePullBackOff" {
		t.Fatalf("19 s after the second failure: %v, want ImagePullBackOff (20 s)", err)
	}
	// The image appears; once the back-off passes the pull succeeds and resets it.
	reg.PushBusybox(t, "missing/image:v1", "/bin/true")
	clk.Step(time.Second)
	if _, err := s.EnsureImage(ctx, req); err != nil {
		t.Fatalf("after the back-off with the image pushed: %v", err)
	}
}

func TestNeverPolicyAndInvalidNames(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	_, err := s.EnsureImage(context.Background(), PullRequest{Image: "127.0.0.1:1/absent:v1", PullPolicy: corev1.PullNever})
	if !errors.Is(err, ErrImageNeverPull) {
		t.Fatalf("Never with a missing image: %v", err)
	}
	_, err = s.EnsureImage(context.Background(), PullRequest{Image: "BAD NAME"})
	if Reason(err) != "InvalidImageName" {
		t.Fatalf("bad name: %v", err)
	}
}

func TestConcurrentPullsOfOneImageShareTheDownload(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.PushBusybox(t, "test/shared:v1", "/bin/true")
	s, _ := newTestStore(t, RootFSCopy)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			im, err := s.EnsureImage(context.Background(), PullRequest{Image: ref})
			errs[i] = err
			if im != nil {
				ids[i] = im.ID
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("pull %d: %s, %v; pull 0 got %s", i, ids[i], errs[i], ids[0])
		}
	}
	// One layer and one config, each downloaded once: later pulls join the running one
	// or find the image stored.
	if got := reg.BlobGets.Load(); got != 2 {
		t.Fatalf("%d blob downloads for 8 concurrent pulls of a one-layer image, want 2", got)
	}
}

func TestCancelledCallerDoesNotBackOffTheImage(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.PushBusybox(t, "test/cancel:v1", "/bin/true")
	s, _ := newTestStore(t, RootFSCopy)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.EnsureImage(ctx, PullRequest{Image: ref}); err != nil && Reason(err) != "ErrImagePull" {
		t.Fatalf("cancelled caller: %v", err)
	}
	if _, err := s.EnsureImage(context.Background(), PullRequest{Image: ref}); err != nil {
		t.Fatalf("after a cancelled caller: %v; want the pull to go ahead, not back off", err)
	}
}
