package images

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/internal/kerneltest"
)

// BenchmarkPullLoopback pulls the busybox image (one 1 MiB gzipped layer) from a
// loopback registry into an empty store: manifest, config and layer download, digest
// checks, unpack, sync and record.
func BenchmarkPullLoopback(b *testing.B) {
	reg := imagetest.NewRegistry(b)
	ref := reg.PushBusybox(b, "bench/busybox:v1", "/bin/true")
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		s, err := Open(Options{Root: filepath.Join(dir, fmt.Sprint(i)), Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), RootFSMode: RootFSCopy})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.EnsureImage(context.Background(), PullRequest{Image: ref}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnsureImagePresent is the IfNotPresent path with the image stored: what each
// container start pays.
func BenchmarkEnsureImagePresent(b *testing.B) {
	reg := imagetest.NewRegistry(b)
	ref := reg.PushBusybox(b, "bench/busybox:v1", "/bin/true")
	s, err := Open(Options{Root: filepath.Join(b.TempDir(), "images"), RootFSMode: RootFSCopy})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.EnsureImage(context.Background(), PullRequest{Image: ref}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.EnsureImage(context.Background(), PullRequest{Image: ref}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchmarkPrepareRootFS(b *testing.B, mode RootFSMode) {
	s, err := Open(Options{Root: filepath.Join(b.TempDir(), "images"), RootFSMode: mode})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := s.storeImage(context.Background(), imagetest.Busybox(b, "/bin/true"), []string{"example.com/bb:v1"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		cdir := filepath.Join(dir, fmt.Sprint(i))
		if err := mkdir(cdir); err != nil {
			b.Fatal(err)
		}
		if _, err := s.PrepareRootFS(fmt.Sprint(i), rec.ID, cdir); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := RemoveRootFS(cdir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkPrepareRootFSOverlay: marker file, mount, last-used record update.
func BenchmarkPrepareRootFSOverlay(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.OverlayFS)
	benchmarkPrepareRootFS(b, RootFSOverlay)
}

// BenchmarkPrepareRootFSCopy: the busybox image copied, synced and renamed.
func BenchmarkPrepareRootFSCopy(b *testing.B) { benchmarkPrepareRootFS(b, RootFSCopy) }
