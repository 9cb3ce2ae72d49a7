package images

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mergeLayerInto applies one unpacked layer on top of the tree at dst, as overlayfs
// would show it: whiteouts (character devices 0/0, or .wh.NAME files) delete what lower
// layers put there, an opaque directory (trusted.overlay.opaque=y, or one holding
// .wh..wh..opq) hides everything lower layers put in it, anything else replaces what
// was there. Owners, modes, extended attributes, times and hard links within the layer
// are kept.
func mergeLayerInto(dst, layer string) error {
	links := map[[2]uint64]string{} // (dev, inode) of a multiply linked file -> its copy
	return filepath.WalkDir(layer, func(src string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		rel, err := filepath.Rel(layer, src)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		base := filepath.Base(rel)
		target := filepath.Join(dst, rel)
		fi, err := os.Lstat(src)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)

		// Whiteouts in either form.
		if fi.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0 {
			return os.RemoveAll(target)
		}
		if strings.HasPrefix(base, whiteoutPrefix) {
			if !strings.HasPrefix(base, whiteoutMetaPref) {
				return os.RemoveAll(filepath.Join(filepath.Dir(target), strings.TrimPrefix(base, whiteoutPrefix)))
			}
			return nil // .wh..wh..opq was handled with its directory; other aufs files mean nothing
		}

		if fi.IsDir() {
			existing, err := os.Lstat(target)
			switch {
			case err == nil && existing.IsDir():
				if isOpaqueDir(src) {
					if err := clearDir(target); err != nil {
						return err
					}
				}
			case err == nil:
				if err := os.RemoveAll(target); err != nil {
					return err
				}
				fallthrough
			default:
				if err := os.Mkdir(target, 0o700); err != nil {
					return err
				}
			}
			return copyMetadata(src, target, fi)
		}

		if err := os.RemoveAll(target); err != nil {
			return err
		}
		if fi.Mode().IsRegular() && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := links[key]; ok {
				return os.Link(first, target)
			}
			links[key] = target
		}
		switch {
		case fi.Mode().IsRegular():
			if err := copyFile(src, target); err != nil {
				return err
			}
		case fi.Mode()&os.ModeSymlink != 0:
			dest, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(dest, target); err != nil {
				return err
			}
		default: // devices, fifos, sockets
			if err := unix.Mknod(target, st.Mode, int(st.Rdev)); err != nil {
				return fmt.Errorf("copy %s: %w", rel, err)
			}
		}
		return copyMetadata(src, target, fi)
	})
}

func isOpaqueDir(dir string) bool {
	buf := make([]byte, 8)
	if n, err := unix.Lgetxattr(dir, overlayOpaqueAttr, buf); err == nil && string(buf[:n]) == "y" {
		return true
	}
	_, err := os.Lstat(filepath.Join(dir, whiteoutOpaque))
	return err == nil
}

func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in) // copy_file_range where the file system allows
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyMetadata gives target src's owner, mode, extended attributes (overlayfs's own
// excepted) and times.
func copyMetadata(src, target string, fi os.FileInfo) error {
	st := fi.Sys().(*syscall.Stat_t)
	if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil && os.Geteuid() == 0 {
		return err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		if err := unix.Fchmodat(unix.AT_FDCWD, target, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	if err := copyXattrs(src, target); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.Timespec(st.Atim), unix.Timespec(st.Mtim)}
	return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func copyXattrs(src, target string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size == 0 {
		return nil // no xattrs, or a file system without them
	}
	names := make([]byte, size)
	size, err = unix.Llistxattr(src, names)
	if err != nil {
		return nil
	}
	for _, attr := range strings.Split(strings.TrimRight(string(names[:size]), "\x00"), "\x00") {
		if attr == "" || strings.HasPrefix(attr, "trusted.overlay.") {
			continue
		}
		vsize, err := unix.Lgetxattr(src, attr, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vsize)
		vsize, err = unix.Lgetxattr(src, attr, val)
		if err != nil {
			continue
		}
		if err := unix.Lsetxattr(target, attr, val[:vsize], 0); err != nil &&
			!errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("copy xattr %s of %s: %w", attr, src, err)
		}
	}
	return nil
}
