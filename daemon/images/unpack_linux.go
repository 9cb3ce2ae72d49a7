package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/atomicfile"
)

// whiteoutFormat is how an unpacked layer records what it deletes from the layers below.
type whiteoutFormat string

const (
	// whiteoutsOverlay: a deleted path is a character device 0/0, an opaque directory
	// carries trusted.overlay.opaque=y; overlayfs reads the layer as a lowerdir directly.
	whiteoutsOverlay whiteoutFormat = "overlay"
	// whiteoutsOCI: the .wh.NAME and .wh..wh..opq files stay as in the tar; only the
	// copying root builder can read such a layer.
	whiteoutsOCI whiteoutFormat = "oci"
)

const (
	whiteoutPrefix    = ".wh."
	whiteoutMetaPref  = ".wh..wh."
	whiteoutOpaque    = ".wh..wh..opq"
	overlayOpaqueAttr = "trusted.overlay.opaque"
	layerMetaFile     = "layer.json"
	layerFSDir        = "fs"
)

// layerMeta is layers/<chainID>/layer.json, written last: a layer directory without it
// is incomplete.
type layerMeta struct {
	ChainID   string         `json:"chainID"`
	DiffID    string         `json:"diffID"`
	Parent    string         `json:"parent,omitempty"`
	Size      int64          `json:"size"`
	Whiteouts whiteoutFormat `json:"whiteouts"`
}

// probeWhiteoutFormat tries to create overlayfs whiteouts under root: it needs
// CAP_MKNOD and CAP_SYS_ADMIN (trusted xattrs) and a file system that keeps them.
func probeWhiteoutFormat(root string) whiteoutFormat {
	dir, err := os.MkdirTemp(root, tmpPrefix+"probe-")
	if err != nil {
		return whiteoutsOCI
	}
	defer os.RemoveAll(dir)
	if err := unix.Mknod(filepath.Join(dir, "w"), unix.S_IFCHR, 0); err != nil {
		return whiteoutsOCI
	}
	if err := unix.Setxattr(dir, overlayOpaqueAttr, []byte("y"), 0); err != nil {
		return whiteoutsOCI
	}
	return whiteoutsOverlay
}

func (s *Store) readLayerMeta(chainID string) (*layerMeta, error) {
	dir, err := s.layerDir(chainID)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, layerMetaFile))
	if err != nil {
		return nil, err
	}
	m := &layerMeta{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("layer %s: %w", chainID, err)
	}
	return m, nil
}

// unpackLayer unpacks one uncompressed layer tar into layers/<chainID>, unless it is
// already there. The tar is checked against diffID; the tree is written into a
// temporary directory, synced and renamed into place, so the layer directory either is
// complete or does not exist.
func (s *Store) unpackLayer(chainID, parent, diffID string, tarStream io.Reader) (*layerMeta, error) {
	if m, err := s.readLayerMeta(chainID); err == nil {
		return m, nil
	}
	final, err := s.layerDir(chainID)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.root, "layers"), tmpPrefix)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	fsRoot := filepath.Join(tmp, layerFSDir)
	if err := os.Mkdir(fsRoot, 0o755); err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	h := sha256.New()
	tee := io.TeeReader(tarStream, h)
	size, err := extractTar(fsRoot, tee, s.whiteouts)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	// The tar may end before its stream does (padding); the digest covers all of it.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		return nil, fmt.Errorf("layer %s: uncompressed content has digest %s", diffID, got)
	}
	m := &layerMeta{ChainID: chainID, DiffID: diffID, Parent: parent, Size: size, Whiteouts: s.whiteouts}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if err := syncFS(tmp); err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	if err := atomicfile.Write(filepath.Join(tmp, layerMetaFile), data, 0o600); err != nil {
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another pull of an image sharing the layer won the race.
		if existing, err2 := s.readLayerMeta(chainID); err2 == nil {
			return existing, nil
		}
		return nil, fmt.Errorf("layer %s: %w", diffID, err)
	}
	return m, syncDir(filepath.Dir(final))
}

func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// extractTar writes a layer tar under root and returns the bytes of regular files
// written. Entries may not leave root: names are cleaned, ".." is refused, and no
// entry is written through a symbolic link (a parent that is a link is an error).
func extractTar(root string, r io.Reader, format whiteoutFormat) (int64, error) {
	tr := tar.NewReader(r)
	var size int64
	type dirTimes struct {
		path  string
		atime time.Time
		mtime time.Time
	}
	var dirs []dirTimes
	privileged := os.Geteuid() == 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read tar: %w", err)
		}
		rel, err := cleanEntryName(hdr.Name)
		if err != nil {
			return 0, err
		}
		if rel == "" {
			continue // the layer's root directory itself
		}
		dir, base := path.Split(rel)
		if err := ensureParents(root, dir); err != nil {
			return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		target := filepath.Join(root, rel)

		if format == whiteoutsOverlay && strings.HasPrefix(base, whiteoutPrefix) {
			switch {
			case base == whiteoutOpaque:
				if err := unix.Lsetxattr(filepath.Join(root, dir), overlayOpaqueAttr, []byte("y"), 0); err != nil {
					return 0, fmt.Errorf("entry %q: mark %s opaque: %w", hdr.Name, dir, err)
				}
			case strings.HasPrefix(base, whiteoutMetaPref):
				// aufs bookkeeping (.wh..wh.plnk and the like): nothing for overlayfs.
			default:
				victim := filepath.Join(root, dir, strings.TrimPrefix(base, whiteoutPrefix))
				if err := os.RemoveAll(victim); err != nil {
					return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
				}
				if err := unix.Mknod(victim, unix.S_IFCHR, 0); err != nil {
					return 0, fmt.Errorf("entry %q: whiteout %s: %w", hdr.Name, victim, err)
				}
			}
			continue
		}

		switch hdr.Typeflag {
		case tar.TypeDir:
			if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
				if err := os.RemoveAll(target); err != nil {
					return 0, err
				}
			}
			if err := os.Mkdir(target, 0o700); err != nil && !os.IsExist(err) {
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			dirs = append(dirs, dirTimes{target, hdr.AccessTime, hdr.ModTime})
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old tars still use TypeRegA
			if err := os.RemoveAll(target); err != nil {
				return 0, err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
			if err != nil {
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			n, err := io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			size += n
		case tar.TypeSymlink:
			if err := os.RemoveAll(target); err != nil {
				return 0, err
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
		case tar.TypeLink:
			old, err := cleanEntryName(hdr.Linkname)
			if err != nil || old == "" {
				return 0, fmt.Errorf("entry %q: hard link to %q: outside the layer", hdr.Name, hdr.Linkname)
			}
			oldDir, _ := path.Split(old)
			if err := checkNoSymlinkParents(root, oldDir); err != nil {
				return 0, fmt.Errorf("entry %q: hard link to %q: %w", hdr.Name, hdr.Linkname, err)
			}
			if err := os.RemoveAll(target); err != nil {
				return 0, err
			}
			if err := os.Link(filepath.Join(root, old), target); err != nil {
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
			continue // a hard link shares the target's owner, mode and times
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			if err := os.RemoveAll(target); err != nil {
				return 0, err
			}
			mode := uint32(hdr.Mode & 0o7777)
			switch hdr.Typeflag {
			case tar.TypeChar:
				mode |= unix.S_IFCHR
			case tar.TypeBlock:
				mode |= unix.S_IFBLK
			default:
				mode |= unix.S_IFIFO
			}
			dev := int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)))
			if err := unix.Mknod(target, mode, dev); err != nil {
				if !privileged && hdr.Typeflag != tar.TypeFifo {
					continue // devices need CAP_MKNOD; an unprivileged store skips them
				}
				return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
			}
		default:
			continue // global headers and kinds no runtime materializes
		}
		if err := applyMetadata(target, hdr, privileged); err != nil {
			return 0, fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	// Directory times last: creating their entries changed them.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		ts := []unix.Timespec{unix.NsecToTimespec(d.atime.UnixNano()), unix.NsecToTimespec(d.mtime.UnixNano())}
		if d.atime.IsZero() {
			ts[0] = ts[1]
		}
		_ = unix.UtimesNanoAt(unix.AT_FDCWD, d.path, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return size, nil
}

// applyMetadata sets owner, mode, extended attributes and times. Owner first: chown
// clears the set-id bits that chmod then restores.
func applyMetadata(target string, hdr *tar.Header, privileged bool) error {
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil && privileged {
		return err
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Fchmodat(unix.AT_FDCWD, target, uint32(hdr.Mode&0o7777), 0); err != nil {
			return err
		}
	}
	for k, v := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(k, "SCHILY.xattr.")
		if !ok || strings.HasPrefix(attr, "trusted.overlay.") {
			continue // overlayfs's own attributes come only from whiteout conversion
		}
		if err := unix.Lsetxattr(target, attr, []byte(v), 0); err != nil && privileged &&
			!errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("set xattr %s: %w", attr, err)
		}
	}
	if hdr.Typeflag != tar.TypeDir {
		mtime := unix.NsecToTimespec(hdr.ModTime.UnixNano())
		atime := mtime
		if !hdr.AccessTime.IsZero() {
			atime = unix.NsecToTimespec(hdr.AccessTime.UnixNano())
		}
		_ = unix.UtimesNanoAt(unix.AT_FDCWD, target, []unix.Timespec{atime, mtime}, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

// cleanEntryName turns a tar entry name into a clean relative path; "" is the root.
// A name that climbs out of the layer with ".." is an error.
func cleanEntryName(name string) (string, error) {
	p := path.Clean("/" + name)
	if strings.Contains(name, "\x00") {
		return "", fmt.Errorf("entry %q: NUL in name", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("entry %q: \"..\" leaves the layer", name)
		}
	}
	return strings.TrimPrefix(p, "/"), nil
}

// ensureParents creates the directories of dir (relative, "/"-separated) under root
// that do not exist, refusing a parent that exists as anything but a directory.
func ensureParents(root, dir string) error {
	cur := root
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("parent %s is a symbolic link", strings.TrimPrefix(cur, root))
		case !fi.IsDir():
			return fmt.Errorf("parent %s is not a directory", strings.TrimPrefix(cur, root))
		}
	}
	return nil
}

func checkNoSymlinkParents(root, dir string) error {
	cur := root
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("parent %s is not a directory", strings.TrimPrefix(cur, root))
		}
	}
	return nil
}
