// Package imagetest builds container images for tests and serves them from an OCI
// registry on loopback: an image holding /bin/busybox (Debian's busybox-static) with
// its applet links and a given entrypoint, pushed to a registry started in the test,
// optionally behind basic authentication. The runtime's and the end-to-end tests use
// it as well as daemon/images' own.
//
// It owns the registry's listening socket (closed by t.Cleanup) and touches nothing
// but /bin/busybox, which it reads.
package imagetest

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BusyboxPath is where Debian's busybox-static puts the binary.
const BusyboxPath = "/bin/busybox"

// Registry is an OCI registry on 127.0.0.1 for one test.
type Registry struct {
	// Host is host:port, the registry part of image references.
	Host string
	// ManifestGets and BlobGets count GET requests for manifests and blobs, so tests
	// can tell whether a pull downloaded anything.
	ManifestGets atomic.Int64
	BlobGets     atomic.Int64

	username, password string
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth makes the registry refuse requests without these credentials (401
// with a Basic challenge, as registries answer).
func WithBasicAuth(username, password string) RegistryOption {
	return func(r *Registry) { r.username, r.password = username, password }
}

// NewRegistry starts a registry on loopback, stopped by t.Cleanup.
func NewRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{}
	for _, o := range opts {
		o(r)
	}
	inner := registry.New(registry.Logger(discardLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.username || p != r.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="imagetest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodGet {
			switch {
			case strings.Contains(req.URL.Path, "/manifests/"):
				r.ManifestGets.Add(1)
			case strings.Contains(req.URL.Path, "/blobs/"):
				r.BlobGets.Add(1)
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Push writes img to repoTag ("repo:tag", no host) on the registry and returns the
// full reference ("127.0.0.1:PORT/repo:tag").
func (r *Registry) Push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		t.Fatalf("imagetest: reference %q: %v", repoTag, err)
	}
	auth := authn.Anonymous
	if r.username != "" {
		auth = &authn.Basic{Username: r.username, Password: r.password}
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatalf("imagetest: push %s: %v", ref, err)
	}
	return ref.String()
}

// PushBusybox builds a busybox image with the entrypoint and pushes it; see Busybox.
func (r *Registry) PushBusybox(t testing.TB, repoTag string, entrypoint ...string) string {
	t.Helper()
	return r.Push(t, repoTag, Busybox(t, entrypoint...))
}

// Busybox builds a one-layer linux/GOARCH image holding /bin/busybox, links for sh,
// echo, cat, ls, sleep, mkdir, true and false, /tmp, and the entrypoint (and PATH in
// its environment). A missing /bin/busybox fails the test naming busybox-static, which
// scripts/install-deps.sh installs.
func Busybox(t testing.TB, entrypoint ...string) v1.Image {
	t.Helper()
	return BusyboxWithFiles(t, nil, entrypoint...)
}

// BusyboxWithFiles is Busybox with extra files in its one layer. A distinct file per
// image gives images whose layers differ, so each is downloaded and unpacked on its
// own (the pod benchmark pulls one per pod).
func BusyboxWithFiles(t testing.TB, extra []File, entrypoint ...string) v1.Image {
	t.Helper()
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatalf("imagetest: %v (install the Debian package busybox-static: scripts/install-deps.sh)", err)
	}
	files := []File{
		{Name: "bin/", Mode: 0o755},
		{Name: "bin/busybox", Mode: 0o755, Body: bin},
		{Name: "tmp/", Mode: 0o1777},
		{Name: "etc/", Mode: 0o755},
		{Name: "etc/passwd", Mode: 0o644, Body: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Name: "etc/group", Mode: 0o644, Body: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, applet := range []string{"sh", "echo", "cat", "ls", "sleep", "mkdir", "true", "false", "id", "wget", "nc"} {
		files = append(files, File{Name: "bin/" + applet, Link: "busybox"})
	}
	files = append(files, extra...)
	img, err := mutate.AppendLayers(empty.Image, Layer(t, files...))
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return WithConfig(t, img, entrypoint...)
}

// WithConfig sets linux/GOARCH, PATH and the entrypoint on img.
func WithConfig(t testing.TB, img v1.Image, entrypoint ...string) v1.Image {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return out
}

// File is one entry of a test layer. A Name ending in "/" is a directory; Link makes a
// symbolic link; Whiteout names a ".wh." entry (Name is then the deleted path) and
// Opaque a ".wh..wh..opq" in directory Name.
type File struct {
	Name     string
	Body     []byte
	Mode     int64
	Link     string
	Whiteout bool
	Opaque   bool
}

// Layer builds a gzip-compressed layer from files, in order.
func Layer(t testing.TB, files ...File) v1.Layer {
	t.Helper()
	data := LayerTar(t, files...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		t.Fatalf("imagetest: layer: %v", err)
	}
	return l
}

// LayerTar returns the uncompressed tar of a layer built from files.
func LayerTar(t testing.TB, files ...File) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(1700000000, 0)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: mtime, Typeflag: tar.TypeReg, Size: int64(len(f.Body))}
		switch {
		case f.Whiteout:
			dir, base := splitPath(f.Name)
			hdr.Name, hdr.Size, hdr.Mode = dir+".wh."+base, 0, 0o644
		case f.Opaque:
			hdr.Name, hdr.Size, hdr.Mode = strings.TrimSuffix(f.Name, "/")+"/.wh..wh..opq", 0, 0o644
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size, hdr.Mode = tar.TypeSymlink, f.Link, 0, 0o777
		case strings.HasSuffix(f.Name, "/"):
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("imagetest: tar %s: %v", f.Name, err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write(f.Body); err != nil {
				t.Fatalf("imagetest: tar %s: %v", f.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("imagetest: tar: %v", err)
	}
	return buf.Bytes()
}

func splitPath(p string) (dir, base string) {
	p = strings.TrimSuffix(p, "/")
	i := strings.LastIndex(p, "/")
	return p[:i+1], p[i+1:]
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
