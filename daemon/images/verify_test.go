package images

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

// A registry that flips a byte in every blob it serves: the pull must fail on the
// digest, as ErrImagePull, and leave no layer behind.
func TestPullRejectsCorruptBlobs(t *testing.T) {
	inner := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if len(body) > 100 {
			body[len(body)/2] ^= 0xff
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/test/corrupt:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, imagetest.Busybox(t, "/bin/true")); err != nil {
		t.Fatal(err)
	}
	s, _ := newTestStore(t, RootFSCopy)
	_, err = s.EnsureImage(context.Background(), PullRequest{Image: ref.String()})
	t.Logf("corrupt pull: %v", err)
	if Reason(err) != "ErrImagePull" {
		t.Fatalf("pull of corrupt blobs: %v, want ErrImagePull", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "layers")); len(entries) != 0 {
		t.Fatalf("a corrupt pull left %d layer directories", len(entries))
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "records")); len(entries) != 0 {
		t.Fatalf("a corrupt pull left a record")
	}
}

func TestUnpackChecksTheDiffID(t *testing.T) {
	s, _ := newTestStore(t, RootFSCopy)
	data := imagetest.LayerTar(t, imagetest.File{Name: "a", Mode: 0o644, Body: []byte("a")})
	wrong := "sha256:" + hex64('1')
	if _, err := s.unpackLayer(wrong, "", wrong, bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("unpack with a wrong diff ID: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "layers")); len(entries) != 0 {
		t.Fatalf("a rejected layer left %d entries", len(entries))
	}
	if _, err := s.unpackLayer(wrong, "", "sha256:../../etc", io.LimitReader(bytes.NewReader(data), 0)); err == nil {
		t.Fatal("a malformed digest was accepted")
	}
}

// A multi-platform index resolves to this node's architecture.
func TestPullFromIndexPicksThisArchitecture(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	mine := imagetest.Busybox(t, "/bin/true")
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "amd64"
	}
	other := imagetest.Busybox(t, "/bin/false")
	cfg, _ := other.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.Architecture = otherArch
	other, err := mutate.ConfigFile(other, cfg)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
	)
	ref, err := name.ParseReference(reg.Host + "/multi/arch:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	s, _ := newTestStore(t, RootFSCopy)
	im, err := s.EnsureImage(context.Background(), PullRequest{Image: ref.String()})
	if err != nil {
		t.Fatal(err)
	}
	wantID, _ := mine.ConfigName()
	if im.ID != wantID.String() {
		t.Fatalf("pulled %s (entrypoint %v), want this architecture's %s", im.ID, im.Config.Config.Entrypoint, wantID)
	}
}
