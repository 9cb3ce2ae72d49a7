package images

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/internal/kerneltest"
)

func newTestStore(t *testing.T, mode RootFSMode) (*Store, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	s, err := Open(Options{Root: filepath.Join(t.TempDir(), "images"), Clock: clk, RootFSMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

// twoLayerImage: the lower layer has /etc/keep, /etc/gone, /opt/a and /opt/b and /lib
// -> a link; the upper deletes /etc/gone, makes /opt opaque (only /opt/c stays), replaces
// /lib with a directory and adds /etc/new.
func twoLayerImage(t *testing.T) v1.Image {
	lower := imagetest.Layer(t,
		imagetest.File{Name: "etc/", Mode: 0o755},
		imagetest.File{Name: "etc/keep", Mode: 0o644, Body: []byte("keep")},
		imagetest.File{Name: "etc/gone", Mode: 0o644, Body: []byte("gone")},
		imagetest.File{Name: "opt/", Mode: 0o755},
		imagetest.File{Name: "opt/a", Mode: 0o644, Body: []byte("a")},
		imagetest.File{Name: "opt/b/", Mode: 0o755},
		imagetest.File{Name: "opt/b/deep", Mode: 0o600, Body: []byte("deep")},
		imagetest.File{Name: "lib", Link: "usr/lib"},
		imagetest.File{Name: "bin/", Mode: 0o755},
		imagetest.File{Name: "bin/tool", Mode: 0o4755, Body: []byte("#!/bin/sh\n")},
	)
	upper := imagetest.Layer(t,
		imagetest.File{Name: "etc/", Mode: 0o755},
		imagetest.File{Name: "etc/gone", Whiteout: true},
		imagetest.File{Name: "etc/new", Mode: 0o640, Body: []byte("new")},
		imagetest.File{Name: "opt/", Mode: 0o755},
		imagetest.File{Name: "opt/", Opaque: true},
		imagetest.File{Name: "opt/c", Mode: 0o644, Body: []byte("c")},
		imagetest.File{Name: "lib/", Mode: 0o755},
		imagetest.File{Name: "lib/libx.so", Mode: 0o644, Body: []byte("x")},
	)
	img, err := mutate.AppendLayers(empty.Image, lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	return imagetest.WithConfig(t, img, "/bin/tool")
}

// treeView lists every path under root with its kind and content, as a container sees it.
func treeView(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			dest, _ := os.Readlink(p)
			out = append(out, rel+" -> "+dest)
		case fi.IsDir():
			out = append(out, rel+"/")
		default:
			body, _ := os.ReadFile(p)
			out = append(out, rel+" "+fi.Mode().Perm().String()+" "+string(body))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var wantMergedTree = []string{
	"bin/", "bin/tool -rwxr-xr-x #!/bin/sh\n",
	"etc/", "etc/keep -rw-r--r-- keep", "etc/new -rw-r----- new",
	"lib/", "lib/libx.so -rw-r--r-- x",
	"opt/", "opt/c -rw-r--r-- c",
}

func storeTestImage(t *testing.T, s *Store, img v1.Image, tags ...string) *Record {
	t.Helper()
	rec, err := s.storeImage(context.Background(), img, tags, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestCopiedRootAppliesWhiteoutsAndOpaqueDirectories(t *testing.T) {
	for _, format := range []whiteoutFormat{whiteoutsOverlay, whiteoutsOCI} {
		t.Run(string(format), func(t *testing.T) { testCopiedRoot(t, format) })
	}
}

func testCopiedRoot(t *testing.T, format whiteoutFormat) {
	s, _ := newTestStore(t, RootFSCopy)
	if format == whiteoutsOverlay && s.whiteouts != whiteoutsOverlay {
		kerneltest.Require(t, kerneltest.Root) // overlayfs whiteouts need CAP_MKNOD and trusted xattrs
	}
	s.whiteouts = format
	rec := storeTestImage(t, s, twoLayerImage(t), "example.com/two:v1")
	containerDir := t.TempDir()
	root, err := s.PrepareRootFS("c1", rec.ID, containerDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeView(t, root); strings.Join(got, "\n") != strings.Join(wantMergedTree, "\n") {
		t.Fatalf("merged tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantMergedTree, "\n"))
	}
	fi, err := os.Stat(filepath.Join(root, "bin/tool"))
	if err != nil || fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("bin/tool lost its setuid bit: %v %v", fi.Mode(), err)
	}
	// Idempotent: a second call keeps what the container wrote.
	if err := os.WriteFile(filepath.Join(root, "written"), []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := s.PrepareRootFS("c1", rec.ID, containerDir); err != nil || again != root {
		t.Fatalf("second PrepareRootFS = %q, %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(root, "written")); err != nil {
		t.Fatalf("second PrepareRootFS rebuilt the root: %v", err)
	}
	for range 2 {
		if err := RemoveRootFS(containerDir); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(containerDir); len(entries) != 0 {
		t.Fatalf("RemoveRootFS left %v", entries)
	}
}

func TestLayersAreSharedAndUnpackedOnce(t *testing.T) {
	s, clk := newTestStore(t, RootFSCopy)
	base := twoLayerImage(t)
	derived, err := mutate.AppendLayers(base, imagetest.Layer(t, imagetest.File{Name: "extra", Mode: 0o644, Body: []byte("e")}))
	if err != nil {
		t.Fatal(err)
	}
	a := storeTestImage(t, s, base, "example.com/base:v1")
	layerDir, _ := s.layerDir(a.ChainIDs[0])
	before, err := os.Stat(filepath.Join(layerDir, layerMetaFile))
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	b := storeTestImage(t, s, derived, "example.com/derived:v1")
	if len(b.ChainIDs) != 3 || b.ChainIDs[0] != a.ChainIDs[0] || b.ChainIDs[1] != a.ChainIDs[1] {
		t.Fatalf("chain IDs %v do not extend %v", b.ChainIDs, a.ChainIDs)
	}
	after, _ := os.Stat(filepath.Join(layerDir, layerMetaFile))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("a shared layer was unpacked again")
	}
	entries, _ := os.ReadDir(filepath.Join(s.Root(), "layers"))
	if len(entries) != 3 {
		t.Fatalf("%d layer directories, want 3", len(entries))
	}

	// Removing the base keeps the layers the derived image uses.
	freed, err := s.RemoveImage(a.ID)
	if err != nil || freed != 0 {
		t.Fatalf("RemoveImage(base) freed %d, %v; want 0 (layers shared)", freed, err)
	}
	if got, _ := s.Lookup("example.com/derived:v1"); got == nil {
		t.Fatal("derived image gone with its base")
	}
	freed, err = s.RemoveImage(b.ID)
	if err != nil || freed != b.Size {
		t.Fatalf("RemoveImage(derived) freed %d, %v; want %d", freed, err, b.Size)
	}
	for _, d := range []string{"layers", "records", "blobs/sha256"} {
		if entries, _ := os.ReadDir(filepath.Join(s.Root(), d)); len(entries) != 0 {
			t.Errorf("%s still holds %d entries", d, len(entries))
		}
	}
}

func TestRetaggingMovesTheName(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	v1img := storeTestImage(t, s, imagetest.Busybox(t, "/bin/true"), "example.com/app:latest")
	v2img := storeTestImage(t, s, imagetest.Busybox(t, "/bin/false"), "example.com/app:latest")
	got, err := s.Lookup("example.com/app:latest")
	if err != nil || got == nil || got.ID != v2img.ID {
		t.Fatalf("Lookup = %v, %v; want %s", got, err, v2img.ID)
	}
	old, err := s.Lookup(v1img.ID)
	if err != nil || old == nil || len(old.RepoTags) != 0 {
		t.Fatalf("old image %+v, %v; want kept by ID without tags", old, err)
	}
	if got.Config.Config.Entrypoint[0] != "/bin/false" {
		t.Fatalf("config entrypoint %v", got.Config.Config.Entrypoint)
	}
}

func TestUnpackRefusesEntriesLeavingTheLayer(t *testing.T) {
	cases := map[string][]imagetest.File{
		"dot-dot":         {{Name: "../escape", Mode: 0o644, Body: []byte("x")}},
		"through symlink": {{Name: "link", Link: "/etc"}, {Name: "link/passwd", Mode: 0o644, Body: []byte("x")}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			outside := filepath.Dir(root)
			_, err := extractTar(filepath.Join(root), strings.NewReader(string(imagetest.LayerTar(t, files...))), whiteoutsOCI)
			if err == nil {
				t.Fatal("the entry was accepted")
			}
			if _, err := os.Stat(filepath.Join(outside, "escape")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file was written outside the layer: %v", err)
			}
		})
	}
}

func TestOpenRemovesCrashLeftovers(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	half := filepath.Join(s.Root(), "layers", tmpPrefix+"123")
	if err := os.MkdirAll(filepath.Join(half, "fs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Root: s.Root()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(half); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("half-unpacked layer survived Open: %v", err)
	}
}

func TestGarbageCollectKeepsImagesInUse(t *testing.T) {
	s, clk := newTestStore(t, RootFSCopy)
	used := storeTestImage(t, s, imagetest.Busybox(t, "/bin/true"), "example.com/used:v1")
	clk.Step(time.Hour)
	unused := storeTestImage(t, s, twoLayerImage(t), "example.com/unused:v1")
	clk.Step(48 * time.Hour)
	inUse := func() (map[string]bool, error) { return map[string]bool{used.ID: true}, nil }
	infos, err := s.Images(inUse)
	if err != nil || len(infos) != 2 {
		t.Fatalf("Images = %v, %v", infos, err)
	}
	res, err := s.GarbageCollect(context.Background(), GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 99, MaximumAge: 24 * time.Hour}, inUse)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0] != unused.ID || res.FreedBytes != unused.Size {
		t.Fatalf("GC result %+v; want only %s deleted, %d bytes", res, unused.ID, unused.Size)
	}
	if im, _ := s.Lookup("example.com/used:v1"); im == nil {
		t.Fatal("image in use was deleted")
	}
	if usage, err := s.DiskUsage(); err != nil || usage < used.Size {
		t.Fatalf("DiskUsage = %d, %v; want at least %d", usage, err, used.Size)
	}
}

func TestGarbageCollectRemovesOrphanedLayers(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	storeTestImage(t, s, imagetest.Busybox(t, "/bin/true"), "example.com/kept:v1")
	// A crash after deleting a record and before deleting its layers.
	orphan := storeTestImage(t, s, twoLayerImage(t), "example.com/orphan:v1")
	p, _ := s.recordPath(orphan.ID)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	res, err := s.GarbageCollect(context.Background(), DefaultGCPolicy(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FreedBytes != orphan.Size {
		t.Fatalf("freed %d bytes, want the orphan's %d", res.FreedBytes, orphan.Size)
	}
	for _, c := range orphan.ChainIDs {
		if d, _ := s.layerDir(c); exists(d) {
			t.Fatalf("orphaned layer %s survived", c)
		}
	}
	if im, err := s.Lookup("example.com/kept:v1"); err != nil || im == nil {
		t.Fatalf("kept image lost: %v", err)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
