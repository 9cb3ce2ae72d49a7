package cgroup

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Host says where a host's cgroup hierarchies are and how they are mounted. Detect
// fills it in for the running system; tests build one over a fixture tree.
type Host struct {
	Mode Mode
	// Root is where the hierarchies are mounted, /sys/fs/cgroup on the running system.
	Root string
	// ProcDir is /proc on the running system (for /proc/<pid>/cgroup and /proc/meminfo).
	ProcDir string
}

// Detect returns the Host for the cgroups mounted at root ("" means DefaultRoot), with
// its mode found by DetectMode through statfs (nil means HostStatfs).
func Detect(root string, statfs StatfsFunc) (Host, error) {
	if root == "" {
		root = DefaultRoot
	}
	if statfs == nil {
		statfs = HostStatfs
	}
	m, err := DetectMode(root, statfs)
	if err != nil {
		return Host{}, err
	}
	return Host{Mode: m, Root: root, ProcDir: "/proc"}, nil
}

// DetectHost returns the running system's Host.
func DetectHost() (Host, error) { return Detect(DefaultRoot, HostStatfs) }

// UnifiedDir is the mount point of the v2 tree: Root on unified hosts, Root/unified on
// hybrid ones, "" on legacy ones.
func (h Host) UnifiedDir() string {
	switch h.Mode {
	case Unified:
		return h.Root
	case Hybrid:
		return filepath.Join(h.Root, "unified")
	}
	return ""
}

// ControllerDir returns the mount point of the hierarchy that carries controller
// ("memory", "pids", "cpu", ...). On unified hosts that is Root. On legacy and hybrid
// hosts it is Root/<controller> (a directory or systemd's symlink to a co-mounted one
// such as cpu,cpuacct); on hybrid hosts a controller with no v1 mount but listed in the
// v2 tree's cgroup.controllers lives there.
func (h Host) ControllerDir(controller string) (string, error) {
	if controller == "" || strings.ContainsAny(controller, "/,") || controller == "." || controller == ".." {
		return "", fmt.Errorf("cgroup controller %q: want a single controller name such as memory", controller)
	}
	switch h.Mode {
	case Unified:
		return h.Root, nil
	case Legacy, Hybrid:
		dir := filepath.Join(h.Root, controller)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			return dir, nil
		}
		if h.Mode == Hybrid {
			if ctrls, err := os.ReadFile(filepath.Join(h.UnifiedDir(), "cgroup.controllers")); err == nil &&
				slices.Contains(strings.Fields(string(ctrls)), controller) {
				return h.UnifiedDir(), nil
			}
		}
		return "", fmt.Errorf("cgroup controller %q: no hierarchy mounted at %s (%s mode)", controller, dir, h.Mode)
	}
	return "", fmt.Errorf("cgroup controller %q: unknown cgroup mode %v", controller, h.Mode)
}

// Dir returns the directory of the cgroup at cgroupPath (as /proc/<pid>/cgroup prints
// it, e.g. "/kubepods/pod1") in the hierarchy carrying controller.
func (h Host) Dir(controller, cgroupPath string) (string, error) {
	if err := checkPath(cgroupPath); err != nil {
		return "", err
	}
	base, err := h.ControllerDir(controller)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, cgroupPath), nil
}

// checkPath accepts an absolute, clean cgroup path, so a path read from a file cannot
// walk out of the hierarchy.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return fmt.Errorf("cgroup path %q: want an absolute, clean path such as /kubepods/pod1", p)
	}
	return nil
}
