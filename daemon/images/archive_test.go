package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

func TestImportDockerArchive(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	img := imagetest.Busybox(t, "/bin/sh", "-c", "echo imported")
	tag, err := name.NewTag("example.com/tools/busybox:1.0")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "busybox.tar")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	got, err := s.Import(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	wantID, _ := img.ConfigName()
	if len(got) != 1 || got[0].ID != wantID.String() || len(got[0].RepoTags) != 1 || got[0].RepoTags[0] != "example.com/tools/busybox:1.0" {
		t.Fatalf("imported %+v; want %s tagged example.com/tools/busybox:1.0", got, wantID)
	}
	im, err := s.EnsureImage(context.Background(), PullRequest{Image: "example.com/tools/busybox:1.0", PullPolicy: "Never"})
	if err != nil || im.ID != wantID.String() {
		t.Fatalf("the imported image is not found by its tag: %v, %v", im, err)
	}
}

func TestImportOCILayoutDirectoryAndTar(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	img := imagetest.Busybox(t, "/bin/true")
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	other := imagetest.WithConfig(t, img, "/bin/false")
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{annotationRefName: "example.com/oci/app:v2"})); err != nil {
		t.Fatal(err)
	}
	// Another architecture's image in the same index is skipped.
	if err := p.AppendImage(other, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "s390x"})); err != nil {
		t.Fatal(err)
	}
	got, err := s.Import(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	wantID, _ := img.ConfigName()
	if len(got) != 1 || got[0].ID != wantID.String() || len(got[0].RepoTags) != 1 || got[0].RepoTags[0] != "example.com/oci/app:v2" {
		t.Fatalf("imported %+v; want only %s as example.com/oci/app:v2", got, wantID)
	}

	// The same layout as a tar, into a fresh store.
	s2, _ := newTestStore(t, RootFSCopy)
	tarPath := filepath.Join(t.TempDir(), "layout.tar")
	writeDirTar(t, dir, tarPath)
	got, err = s2.Import(context.Background(), tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != wantID.String() {
		t.Fatalf("imported from tar %+v", got)
	}
}

func TestImportRejectsOtherFiles(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("not an archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), path); err == nil {
		t.Fatal("a text file imported")
	}
}

func writeDirTar(t *testing.T, dir, out string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = rel
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			defer src.Close()
			_, err = io.Copy(tw, src)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func FuzzImportArchive(f *testing.F) {
	f.Add([]byte("not a tar"))
	f.Add(fuzzTar(f, map[string]string{"manifest.json": `[{"Config":"c.json","RepoTags":["x:1"],"Layers":["l.tar"]}]`, "c.json": `{}`, "l.tar": ""}))
	f.Add(fuzzTar(f, map[string]string{"manifest.json": `[{"Config":"../../etc/passwd","Layers":[]}]`}))
	f.Add(fuzzTar(f, map[string]string{"oci-layout": `{"imageLayoutVersion":"1.0.0"}`, "index.json": `{"schemaVersion":2,"manifests":[]}`}))
	f.Add(fuzzTar(f, map[string]string{"oci-layout": `{}`, "index.json": `{"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:` + hex64('0') + `","size":2}]}`, "blobs/sha256/" + hex64('0'): `{}`}))
	// One store for the whole run: a fresh store per input costs more than the input.
	s, err := Open(Options{Root: filepath.Join(f.TempDir(), "images"), RootFSMode: RootFSCopy})
	if err != nil {
		f.Fatal(err)
	}
	archiveDir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(archiveDir, "archive")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		imgs, err := s.Import(context.Background(), path)
		if err != nil {
			return
		}
		// Whatever was imported is complete and findable by ID.
		for _, im := range imgs {
			if got, err := s.Lookup(im.ID); err != nil || got == nil {
				t.Fatalf("imported %s not found: %v", im.ID, err)
			}
		}
	})
}

func fuzzTar(f *testing.F, files map[string]string) []byte {
	f.Helper()
	buf := new(bytes.Buffer)
	tw := tar.NewWriter(buf)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			f.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			f.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
