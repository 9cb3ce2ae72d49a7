package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Mode is how a host mounts its cgroup hierarchies.
type Mode int

const (
	// Legacy is cgroup v1 only: one hierarchy per controller (or group of controllers).
	Legacy Mode = iota + 1
	// Hybrid mounts v1 hierarchies for the controllers and a controller-less v2 tree at
	// <root>/unified, which still gives every cgroup its *.pressure files.
	Hybrid
	// Unified is cgroup v2 alone, mounted at the root.
	Unified
)

// String returns "legacy", "hybrid" or "unified".
func (m Mode) String() string {
	switch m {
	case Legacy:
		return "legacy"
	case Hybrid:
		return "hybrid"
	case Unified:
		return "unified"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Filesystem magic numbers from linux/magic.h, spelled out so the detection logic
// builds and is tested on any OS.
const (
	Cgroup2SuperMagic = 0x63677270
	CgroupSuperMagic  = 0x27e0eb
	TmpfsMagic        = 0x01021994
)

// DefaultRoot is where Linux distributions mount the cgroup hierarchies.
const DefaultRoot = "/sys/fs/cgroup"

// StatfsFunc returns the filesystem magic (statfs f_type) of the filesystem at path.
// HostStatfs is the real one; tests pass a fake.
type StatfsFunc func(path string) (int64, error)

// DetectMode tells the cgroup mode from the filesystem mounted at root: cgroup2 there
// means unified; tmpfs with cgroup2 at root/unified means hybrid; tmpfs (or a single v1
// hierarchy) otherwise means legacy. Anything else at root is an error, since there is
// no cgroup filesystem to read.
func DetectMode(root string, statfs StatfsFunc) (Mode, error) {
	magic, err := statfs(root)
	if err != nil {
		return 0, fmt.Errorf("cgroup mode: statfs %s: %w", root, err)
	}
	switch magic {
	case Cgroup2SuperMagic:
		return Unified, nil
	case CgroupSuperMagic:
		return Legacy, nil
	case TmpfsMagic:
		unified := filepath.Join(root, "unified")
		m, err := statfs(unified)
		if err == nil && m == Cgroup2SuperMagic {
			return Hybrid, nil
		}
		if err != nil && !isNotExist(err) {
			return 0, fmt.Errorf("cgroup mode: statfs %s: %w", unified, err)
		}
		return Legacy, nil
	}
	return 0, fmt.Errorf("cgroup mode: %s has filesystem magic %#x, not tmpfs (%#x) or cgroup2 (%#x): are cgroups mounted?", root, magic, TmpfsMagic, Cgroup2SuperMagic)
}

// isNotExist is true for a missing path: fs.ErrNotExist matches ENOENT from the real
// statfs as well as the errors fakes return.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// HostMode returns the running system's cgroup mode.
func HostMode() (Mode, error) { return DetectMode(DefaultRoot, HostStatfs) }
