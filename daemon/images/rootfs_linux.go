package images

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/atomicfile"
)

// RootFSMode is how container root file systems are built.
type RootFSMode string

const (
	// RootFSOverlay mounts overlayfs: the image's unpacked layers as lowerdirs, and an
	// upperdir and workdir per container.
	RootFSOverlay RootFSMode = "overlay"
	// RootFSCopy copies the merged layers into the container's directory, for hosts or
	// file systems where overlayfs does not work.
	RootFSCopy RootFSMode = "copy"
)

// Names inside the directory the runtime gives for a container.
const (
	rootfsDirName   = "rootfs"
	upperDirName    = "overlay-upper"
	workDirName     = "overlay-work"
	emptyLowerName  = "overlay-empty"
	rootfsMarker    = "rootfs.json"
	rootfsTmpPrefix = ".rootfs" + tmpPrefix
)

type rootfsState struct {
	ContainerID string     `json:"containerID"`
	ImageID     string     `json:"imageID"`
	Mode        RootFSMode `json:"mode"`
	ChainIDs    []string   `json:"chainIDs"`
}

// RootFSModeInUse returns the mode PrepareRootFS uses, probing overlayfs on first call.
func (s *Store) RootFSModeInUse() RootFSMode {
	s.rootfsMu.Lock()
	defer s.rootfsMu.Unlock()
	if s.rootfsMode == "" {
		if err := probeOverlay(s.root); err != nil {
			s.log.Warn("overlayfs does not work here; container roots are copies of the image", "err", err)
			s.rootfsMode = RootFSCopy
		} else {
			s.rootfsMode = RootFSOverlay
		}
	}
	return s.rootfsMode
}

// probeOverlay mounts a one-layer overlay with an upperdir under root and unmounts it:
// the kernel must have overlayfs and accept root's file system for lower and upper.
func probeOverlay(root string) error {
	dir, err := os.MkdirTemp(root, tmpPrefix+"overlay-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s",
		filepath.Join(dir, "lower"), filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
	merged := filepath.Join(dir, "merged")
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		return fmt.Errorf("mount overlay: %w", err)
	}
	return unix.Unmount(merged, 0)
}

// PrepareRootFS builds the root file system of container containerID from image
// imageID (an ID from EnsureImage) in containerDir, which the runtime owns and has
// created, and returns its path, containerDir/rootfs. It is idempotent: called again, or after a crash or a reboot, it
// returns the same root, mounting the overlay again if it is no longer mounted and
// keeping what the container wrote. It also marks the image used.
func (s *Store) PrepareRootFS(containerID, imageID, containerDir string) (string, error) {
	rec, err := s.readRecord(imageID)
	if err != nil {
		return "", fmt.Errorf("rootfs for image %s: %w", imageID, err)
	}
	rootfs := filepath.Join(containerDir, rootfsDirName)
	if strings.ContainsAny(containerDir, ",:") {
		return "", fmt.Errorf("rootfs: container directory %q holds a comma or colon, which overlayfs options cannot carry", containerDir)
	}
	unlock := s.containerRoots.lock(filepath.Clean(containerDir))
	err = s.buildRootFS(containerID, rec, containerDir)
	unlock()
	if err != nil {
		return "", fmt.Errorf("rootfs of container %s (image %s) in %s: %w", containerID, imageID, containerDir, err)
	}
	if err := s.MarkUsed(rec.ID); err != nil {
		return "", err
	}
	return rootfs, nil
}

// buildRootFS runs under the shared lock: layers stay while the root is built, as GC
// takes the exclusive lock to delete them.
func (s *Store) buildRootFS(containerID string, rec *Record, containerDir string) error {
	unlock, err := s.lock(unix.LOCK_SH)
	if err != nil {
		return err
	}
	defer unlock()
	if !s.layersPresent(rec) {
		return errors.New("layers missing from the store")
	}
	mode := s.RootFSModeInUse()
	if mode == RootFSOverlay {
		for _, c := range rec.ChainIDs {
			if m, err := s.readLayerMeta(c); err != nil || m.Whiteouts != whiteoutsOverlay {
				mode = RootFSCopy // layers unpacked without overlayfs whiteouts
				break
			}
		}
	}
	state := rootfsState{ContainerID: containerID, ImageID: rec.ID, Mode: mode, ChainIDs: rec.ChainIDs}
	fresh := true
	if prev, err := readRootfsState(containerDir); err == nil {
		fresh = false
		if prev.ImageID != rec.ID {
			return fmt.Errorf("the root there was built from image %s; remove it first", prev.ImageID)
		}
		state = *prev // keep the mode it was built with
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	// The marker goes first, so a crash between mounting and recording leaves a root
	// RemoveRootFS still knows how to take apart.
	if err := atomicfile.Write(filepath.Join(containerDir, rootfsMarker), data, 0o600); err != nil {
		return err
	}
	lowers := make([]string, len(rec.ChainIDs))
	for i, c := range rec.ChainIDs {
		d, err := s.layerDir(c)
		if err != nil {
			return err
		}
		lowers[len(lowers)-1-i] = filepath.Join(d, layerFSDir) // overlayfs lists the top layer first
	}
	if state.Mode != RootFSOverlay {
		return copyRoot(containerDir, lowers)
	}
	err = mountOverlay(containerDir, lowers)
	if err == nil || !fresh {
		return err // a root that was mounted before must not silently become a copy
	}
	// The store's file system takes overlayfs, this container directory's may not
	// (another file system under the pods' directory): copy instead.
	s.log.Warn("overlay mount failed; copying the image into the container's root instead",
		"container", containerID, "dir", containerDir, "err", err)
	if err := RemoveRootFS(containerDir); err != nil {
		return err
	}
	state.Mode = RootFSCopy
	if data, err = json.Marshal(state); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(containerDir, rootfsMarker), data, 0o600); err != nil {
		return err
	}
	return copyRoot(containerDir, lowers)
}

// RootFSImage returns the ID of the image the container root in containerDir was
// built from, or "" when containerDir holds none: the runtime reports it as in use, so
// image GC keeps the layers under a container's overlay.
func RootFSImage(containerDir string) (string, error) {
	st, err := readRootfsState(containerDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return st.ImageID, nil
}

func readRootfsState(containerDir string) (*rootfsState, error) {
	data, err := os.ReadFile(filepath.Join(containerDir, rootfsMarker))
	if err != nil {
		return nil, err
	}
	st := &rootfsState{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(containerDir, rootfsMarker), err)
	}
	return st, nil
}

func mountOverlay(containerDir string, lowers []string) error {
	rootfs := filepath.Join(containerDir, rootfsDirName)
	mounted, err := isMountPoint(rootfs)
	if err != nil || mounted {
		return err
	}
	for _, d := range []string{rootfsDirName, upperDirName, workDirName} {
		if err := os.MkdirAll(filepath.Join(containerDir, d), 0o755); err != nil {
			return err
		}
	}
	if len(lowers) == 0 { // an image without layers: overlayfs needs a lowerdir
		empty := filepath.Join(containerDir, emptyLowerName)
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return err
		}
		lowers = []string{empty}
	}
	upper, work := filepath.Join(containerDir, upperDirName), filepath.Join(containerDir, workDirName)
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lowers, ":"), upper, work)
	if len(data) < os.Getpagesize()-1 {
		if err := unix.Mount("overlay", rootfs, "overlay", 0, data); err != nil {
			return fmt.Errorf("mount overlay on %s: %w", rootfs, err)
		}
		return nil
	}
	err = mountOverlayFSConfig(rootfs, lowers, upper, work)
	if !errors.Is(err, errNoLowerdirPlus) {
		return err
	}
	// Kernels before 6.8 (Debian 12's 6.1, Ubuntu 22.04's 5.15): name the layers by
	// descriptor instead, which fits a few hundred layers in the page.
	return mountOverlayByDescriptors(rootfs, lowers, upper, work)
}

// errNoLowerdirPlus: the kernel refused fsconfig's lowerdir+ (added in Linux 6.8).
var errNoLowerdirPlus = errors.New("the kernel has no overlayfs lowerdir+ (Linux 6.8)")

// mountOverlayByDescriptors mounts with mount(2), naming each lower layer by an O_PATH
// descriptor of this process (/proc/self/fd/N, which overlayfs follows when it looks the
// layer up at mount time) rather than by its path, so that an image with many layers
// fits mount(2)'s one page of options on kernels without lowerdir+.
func mountOverlayByDescriptors(rootfs string, lowers []string, upper, work string) error {
	names := make([]string, len(lowers))
	for i, l := range lowers {
		fd, err := unix.Open(l, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("overlay on %s: open layer %s: %w", rootfs, l, err)
		}
		defer unix.Close(fd)
		names[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(names, ":"), upper, work)
	if len(data) >= os.Getpagesize()-1 {
		return fmt.Errorf("overlay on %s: %d layers exceed mount(2)'s option page even named by descriptor, and %w", rootfs, len(lowers), errNoLowerdirPlus)
	}
	if err := unix.Mount("overlay", rootfs, "overlay", 0, data); err != nil {
		return fmt.Errorf("mount overlay on %s (%d layers named by descriptor): %w", rootfs, len(lowers), err)
	}
	return nil
}

// mountOverlayFSConfig mounts through the new mount API, adding lowerdirs one by one
// (lowerdir+, Linux 6.8), for images whose layer list does not fit in one page of
// mount(2) options.
func mountOverlayFSConfig(rootfs string, lowers []string, upper, work string) error {
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen overlay: %w", err)
	}
	defer unix.Close(fsfd)
	for _, l := range lowers {
		if err := unix.FsconfigSetString(fsfd, "lowerdir+", l); err != nil {
			// 6.5 to 6.7 refuse the unknown parameter at once; before 6.5 overlayfs
			// takes legacy options, which the VFS collects into one page and refuses
			// (EINVAL too) when they overflow it, as these do.
			if errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("overlay on %s: %d layers exceed mount(2)'s option page and %w: %w", rootfs, len(lowers), errNoLowerdirPlus, err)
			}
			return fmt.Errorf("overlay on %s: %d layers exceed mount(2)'s option page and lowerdir+ failed: %w", rootfs, len(lowers), err)
		}
	}
	if err := unix.FsconfigSetString(fsfd, "upperdir", upper); err != nil {
		return fmt.Errorf("overlay upperdir: %w", err)
	}
	if err := unix.FsconfigSetString(fsfd, "workdir", work); err != nil {
		return fmt.Errorf("overlay workdir: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("overlay create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fsmount overlay: %w", err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", unix.AT_FDCWD, rootfs, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move overlay mount to %s: %w", rootfs, err)
	}
	return nil
}

// copyRoot merges the layers into a temporary directory and renames it to rootfs; an
// existing rootfs is complete (the rename is the last step) and is kept.
func copyRoot(containerDir string, lowers []string) error {
	rootfs := filepath.Join(containerDir, rootfsDirName)
	if _, err := os.Lstat(rootfs); err == nil {
		return nil
	}
	if err := removeTemporaries(containerDir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(containerDir, rootfsTmpPrefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for i := len(lowers) - 1; i >= 0; i-- { // bottom layer first
		if err := mergeLayerInto(tmp, lowers[i]); err != nil {
			return err
		}
	}
	if err := syncFS(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, rootfs)
}

func removeTemporaries(containerDir string) error {
	entries, err := os.ReadDir(containerDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), rootfsTmpPrefix) {
			if err := os.RemoveAll(filepath.Join(containerDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveRootFS takes apart what PrepareRootFS built in containerDir: it unmounts the
// overlay (lazily if it is busy) and removes the root, the upper and work directories
// and the marker. It is idempotent and works on a half-built root after a crash.
func RemoveRootFS(containerDir string) error {
	rootfs := filepath.Join(containerDir, rootfsDirName)
	for range 8 { // a crash between mount and marker, repeated, can stack mounts
		mounted, err := isMountPoint(rootfs)
		if err != nil {
			return err
		}
		if !mounted {
			break
		}
		if err := unix.Unmount(rootfs, 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("unmount %s: %w", rootfs, err)
			}
			if err := unix.Unmount(rootfs, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", rootfs, err)
			}
		}
	}
	if mounted, err := isMountPoint(rootfs); err != nil || mounted {
		return fmt.Errorf("unmount %s: still mounted (%v)", rootfs, err)
	}
	if err := removeTemporaries(containerDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, d := range []string{rootfsDirName, upperDirName, workDirName, emptyLowerName, rootfsMarker} {
		if err := os.RemoveAll(filepath.Join(containerDir, d)); err != nil {
			return fmt.Errorf("remove rootfs: %w", err)
		}
	}
	return nil
}

// isMountPoint reports whether path is a mount point in this mount namespace
// (/proc/self/mountinfo, octal escapes decoded).
func isMountPoint(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMountPath(fields[4]) == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
