package images

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/internal/kerneltest"
)

// The overlay root of a two-layer image shows the merged view (a whiteout hides a lower
// file, an opaque directory hides a lower directory's contents), writes go to the
// container's upperdir and leave the shared layers untouched, and removal leaves no
// mount behind.
func TestOverlayRootMergesLayersAndCleansUp(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.OverlayFS)
	s, _ := newTestStore(t, "")
	if mode := s.RootFSModeInUse(); mode != RootFSOverlay {
		t.Fatalf("the overlay probe chose %s on a host with overlayfs", mode)
	}
	rec := storeTestImage(t, s, twoLayerImage(t), "example.com/two:v1")
	containerDir := t.TempDir()
	t.Cleanup(func() {
		if err := RemoveRootFS(containerDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	root, err := s.PrepareRootFS("c1", rec.ID, containerDir)
	if err != nil {
		t.Fatal(err)
	}
	if mounted, err := isMountPoint(root); err != nil || !mounted {
		t.Fatalf("%s is not a mount point (%v)", root, err)
	}
	if got := treeView(t, root); strings.Join(got, "\n") != strings.Join(wantMergedTree, "\n") {
		t.Fatalf("merged view:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantMergedTree, "\n"))
	}

	// Writes land in the container's upperdir, not in the shared layer.
	if err := os.WriteFile(filepath.Join(root, "etc/keep"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "etc/new")); err != nil {
		t.Fatal(err)
	}
	lowerDir, _ := s.layerDir(rec.ChainIDs[0])
	if body, _ := os.ReadFile(filepath.Join(lowerDir, layerFSDir, "etc/keep")); string(body) != "keep" {
		t.Fatalf("the shared layer changed: %q", body)
	}
	if body, _ := os.ReadFile(filepath.Join(containerDir, upperDirName, "etc/keep")); string(body) != "changed" {
		t.Fatalf("upperdir holds %q", body)
	}

	// Idempotent, and after an unmount (a reboot) it mounts again keeping the writes.
	if again, err := s.PrepareRootFS("c1", rec.ID, containerDir); err != nil || again != root {
		t.Fatalf("second PrepareRootFS = %q, %v", again, err)
	}
	if n := countMounts(t, root); n != 1 {
		t.Fatalf("%d mounts on %s after a second prepare, want 1", n, root)
	}
	if err := unmountForTest(root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PrepareRootFS("c1", rec.ID, containerDir); err != nil {
		t.Fatal(err)
	}
	if body, _ := os.ReadFile(filepath.Join(root, "etc/keep")); string(body) != "changed" {
		t.Fatalf("after remount etc/keep is %q", body)
	}

	if err := RemoveRootFS(containerDir); err != nil {
		t.Fatal(err)
	}
	if n := countMounts(t, root); n != 0 {
		t.Fatalf("%d mounts left on %s", n, root)
	}
	if entries, _ := os.ReadDir(containerDir); len(entries) != 0 {
		t.Fatalf("RemoveRootFS left %v", entries)
	}
}

func countMounts(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescapeMountPath(f[4]) == path {
			n++
		}
	}
	return n
}

// Forty layers make the lowerdir list longer than mount(2)'s one-page option string;
// the root is mounted through fsconfig's lowerdir+ instead, or, on kernels before 6.8,
// with the layers named by descriptor.
func TestOverlayRootWithManyLayers(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.OverlayFS)
	s, _ := newTestStore(t, RootFSOverlay)
	img := v1.Image(empty.Image)
	for i := range 40 {
		var err error
		img, err = mutate.AppendLayers(img, imagetest.Layer(t, imagetest.File{Name: fmt.Sprintf("f%02d", i), Mode: 0o644, Body: []byte{byte('a' + i%26)}}))
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := storeTestImage(t, s, imagetest.WithConfig(t, img, "/f00"), "example.com/many:v1")
	optionLen := 0
	for _, c := range rec.ChainIDs {
		d, _ := s.layerDir(c)
		optionLen += len(d) + len("/fs:")
	}
	if optionLen < os.Getpagesize() {
		t.Fatalf("lowerdir list of %d bytes fits in a page; the test needs it not to", optionLen)
	}
	containerDir := t.TempDir()
	t.Cleanup(func() {
		if err := RemoveRootFS(containerDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	root, err := s.PrepareRootFS("c-many", rec.ID, containerDir)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMounts(t, root); n != 1 {
		t.Fatalf("%d mounts on %s, want 1", n, root)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 40 {
		t.Fatalf("root holds %d entries (%v), want 40", len(entries), err)
	}
	if err := RemoveRootFS(containerDir); err != nil {
		t.Fatal(err)
	}
	if n := countMounts(t, root); n != 0 {
		t.Fatalf("%d mounts left", n)
	}
}

// A container directory on a file system overlayfs refuses as upperdir (here an
// overlay itself) gets a copied root instead, and it stays a copy when prepared again.
func TestOverlayFallsBackToCopyPerContainer(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.OverlayFS)
	s, _ := newTestStore(t, RootFSOverlay)
	rec := storeTestImage(t, s, twoLayerImage(t), "example.com/two:v1")

	base := t.TempDir()
	for _, d := range []string{"l", "u", "w", "m"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(base, "m")
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Join(base, "l"), filepath.Join(base, "u"), filepath.Join(base, "w"))
	if err := mountForTest("overlay", merged, "overlay", data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unmountForTest(merged); err != nil {
			t.Errorf("unmount %s: %v", merged, err)
		}
	})
	containerDir := filepath.Join(merged, "c1")
	if err := os.Mkdir(containerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveRootFS(containerDir) })
	root, err := s.PrepareRootFS("c1", rec.ID, containerDir)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMounts(t, root); n != 0 {
		t.Fatalf("%d mounts on %s, want a copy", n, root)
	}
	if got := treeView(t, root); strings.Join(got, "\n") != strings.Join(wantMergedTree, "\n") {
		t.Fatalf("copied root:\n%s", strings.Join(got, "\n"))
	}
	if st, err := readRootfsState(containerDir); err != nil || st.Mode != RootFSCopy {
		t.Fatalf("rootfs.json %+v, %v; want mode copy", st, err)
	}
	if _, err := s.PrepareRootFS("c1", rec.ID, containerDir); err != nil {
		t.Fatalf("second prepare: %v", err)
	}
	if err := RemoveRootFS(containerDir); err != nil {
		t.Fatal(err)
	}
}

// Concurrent prepares of one container's root mount it once.
func TestConcurrentPrepareMountsOnce(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.OverlayFS)
	s, _ := newTestStore(t, RootFSOverlay)
	rec := storeTestImage(t, s, twoLayerImage(t), "example.com/two:v1")
	containerDir := t.TempDir()
	t.Cleanup(func() {
		if err := RemoveRootFS(containerDir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { _, errs[i] = s.PrepareRootFS("c1", rec.ID, containerDir) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countMounts(t, filepath.Join(containerDir, rootfsDirName)); n != 1 {
		t.Fatalf("%d mounts after concurrent prepares, want 1", n)
	}
}

// The fallback for kernels without lowerdir+, exercised on every kernel: forty layers
// with long paths, named by descriptor, all visible in the merged root.
func TestOverlayByDescriptorsWithManyLayers(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.OverlayFS)
	dir := t.TempDir()
	long := strings.Repeat("d", 100)
	var lowers []string
	for i := range 40 {
		l := filepath.Join(dir, fmt.Sprintf("%s-%02d", long, i))
		if err := os.MkdirAll(l, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(l, fmt.Sprintf("f%02d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		lowers = append(lowers, l)
	}
	if n := len(strings.Join(lowers, ":")); n < os.Getpagesize() {
		t.Fatalf("lowerdir list of %d bytes fits in a page; the test needs it not to", n)
	}
	root, upper, work := filepath.Join(dir, "rootfs"), filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	for _, d := range []string{root, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := mountOverlayByDescriptors(root, lowers, upper, work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(root, 0); err != nil {
			t.Errorf("unmount %s: %v", root, err)
		}
	})
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 40 {
		t.Fatalf("root holds %d entries (%v), want 40", len(entries), err)
	}
}
