package images

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations naming an image in an OCI layout's index.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// ArchiveKind is the format of an image archive.
type ArchiveKind string

const (
	ArchiveDocker    ArchiveKind = "docker-save" // manifest.json with RepoTags (docker save, tarball.Write)
	ArchiveOCILayout ArchiveKind = "oci-layout"  // oci-layout and index.json, as a tar or a directory
)

// Import stores every image of an archive: a docker-save tar, an OCI layout tar, or
// an OCI layout directory; tars may be gzip-compressed. A docker archive carrying
// both manifest.json and an OCI layout (docker 25 and later) is read as docker's,
// which names its images. Images are named by their RepoTags (docker) or their
// io.containerd.image.name or a fully qualified org.opencontainers.image.ref.name
// annotation (OCI); unnamed images are stored by ID only.
func (s *Store) Import(ctx context.Context, path string) ([]*Image, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if fi.IsDir() {
		return s.importLayout(ctx, layout.Path(path))
	}
	opener := archiveOpener(path)
	kind, err := DetectArchive(opener)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	switch kind {
	case ArchiveDocker:
		return s.importDocker(ctx, path, opener)
	default:
		dir, err := os.MkdirTemp(s.root, tmpPrefix+"import-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := extractLayoutTar(opener, dir); err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		return s.importLayout(ctx, layout.Path(dir))
	}
}

// archiveOpener opens the archive, decompressing gzip when it starts with gzip's magic.
func archiveOpener(path string) tarball.Opener {
	return func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		br := bufio.NewReader(f)
		if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				f.Close()
				return nil, err
			}
			return readCloser{zr, f}, nil
		}
		return readCloser{br, f}, nil
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// DetectArchive reads the archive's entry names and says which format it is.
func DetectArchive(opener tarball.Opener) (ArchiveKind, error) {
	rc, err := opener()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var hasLayout, hasIndex bool
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not a tar archive: %w", err)
		}
		switch strings.TrimPrefix(filepath.Clean("/"+hdr.Name), "/") {
		case "manifest.json":
			return ArchiveDocker, nil
		case "oci-layout":
			hasLayout = true
		case "index.json":
			hasIndex = true
		}
	}
	if hasLayout && hasIndex {
		return ArchiveOCILayout, nil
	}
	return "", errors.New("neither a docker-save archive (manifest.json) nor an OCI layout (oci-layout, index.json)")
}

func (s *Store) importDocker(ctx context.Context, path string, opener tarball.Opener) ([]*Image, error) {
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, fmt.Errorf("import %s: manifest.json: %w", path, err)
	}
	if len(manifest) == 0 {
		return nil, fmt.Errorf("import %s: manifest.json lists no image", path)
	}
	var out []*Image
	for i, desc := range manifest {
		var tag *name.Tag
		var tags []string
		for _, t := range desc.RepoTags {
			parsed, err := name.NewTag(t, name.WeakValidation)
			if err != nil {
				return nil, fmt.Errorf("import %s: manifest.json[%d].RepoTags: %q: %w", path, i, t, err)
			}
			tags = append(tags, parsed.Name())
			if tag == nil {
				tag = &parsed
			}
		}
		if tag == nil && len(manifest) > 1 {
			return nil, fmt.Errorf("import %s: manifest.json[%d] has no RepoTags, and an archive of several images needs them to tell images apart", path, i)
		}
		img, err := tarball.Image(opener, tag)
		if err != nil {
			return nil, fmt.Errorf("import %s: image %d: %w", path, i, err)
		}
		rec, err := s.storeImage(ctx, img, tags, nil)
		if err != nil {
			return nil, fmt.Errorf("import %s: image %d: %w", path, i, err)
		}
		im, err := s.withConfig(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}

func (s *Store) importLayout(ctx context.Context, p layout.Path) ([]*Image, error) {
	index, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", p, err)
	}
	im, err := index.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("import %s: index.json: %w", p, err)
	}
	var out []*Image
	for i, desc := range im.Manifests {
		img, err := imageForPlatform(index, desc)
		if err != nil {
			return nil, fmt.Errorf("import %s: index.json manifests[%d]: %w", p, i, err)
		}
		if img == nil {
			continue
		}
		var tags, digests []string
		if ref := layoutImageName(desc.Annotations); ref != nil {
			if d, err := img.Digest(); err == nil {
				digests = append(digests, ref.Context().Digest(d.String()).Name())
			}
			if _, ok := ref.(name.Tag); ok {
				tags = append(tags, ref.Name())
			}
		}
		rec, err := s.storeImage(ctx, img, tags, digests)
		if err != nil {
			return nil, fmt.Errorf("import %s: index.json manifests[%d]: %w", p, i, err)
		}
		stored, err := s.withConfig(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, stored)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("import %s: no image for linux/%s in index.json", p, goarch)
	}
	return out, nil
}

// imageForPlatform returns desc's image, or for a nested index the image for this
// node's platform; nil when a platform-specific entry is for another platform.
func imageForPlatform(index v1.ImageIndex, desc v1.Descriptor) (v1.Image, error) {
	if desc.MediaType.IsIndex() {
		child, err := index.ImageIndex(desc.Digest)
		if err != nil {
			return nil, err
		}
		cm, err := child.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, d := range cm.Manifests {
			if d.MediaType.IsImage() && platformMatches(d.Platform) {
				return child.Image(d.Digest)
			}
		}
		return nil, nil
	}
	if !desc.MediaType.IsImage() {
		return nil, nil // attestations, signatures and the like
	}
	if desc.Platform != nil && !platformMatches(desc.Platform) {
		return nil, nil
	}
	return index.Image(desc.Digest)
}

func platformMatches(p *v1.Platform) bool {
	return p == nil || p.OS == "linux" && p.Architecture == goarch
}

// layoutImageName reads an image's name from its index annotations; a bare tag
// ("latest") names no repository and is ignored.
func layoutImageName(annotations map[string]string) name.Reference {
	for _, key := range []string{annotationContainerdName, annotationRefName} {
		v := annotations[key]
		if v == "" || !strings.ContainsAny(v, "/:@") {
			continue
		}
		if ref, err := name.ParseReference(v, name.WeakValidation); err == nil {
			return ref
		}
	}
	return nil
}

// extractLayoutTar writes an OCI layout tar's files (regular files and directories
// only, names kept inside dir) into dir.
func extractLayoutTar(opener tarball.Opener, dir string) error {
	rc, err := opener()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := cleanEntryName(hdr.Name)
		if err != nil {
			return err
		}
		if rel == "" {
			continue
		}
		target := filepath.Join(dir, rel)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old tars still use TypeRegA
			if err := ensureParents(dir, filepath.Dir(rel)); err != nil {
				return fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: an OCI layout holds only files and directories", hdr.Name)
		}
	}
}

// goarch is the architecture images must be built for on this node.
const goarch = runtime.GOARCH
