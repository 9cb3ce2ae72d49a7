//go:build linux

package podcgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/kernel/cgroup"
)

// Cleanup removes every pod cgroup (<parent>/pod*) and the containers' cgroups below
// them in every hierarchy mounted on host, deepest first, then parent itself when
// nothing else is left in it: what plinthd --cleanup leaves no trace of. A cgroup that
// still holds a process is kept, with everything above it, and named in the error;
// cgroups already gone are not an error. It returns the cgroup directories removed.
func Cleanup(host cgroup.Host, parent string) (removed []string, err error) {
	if !path.IsAbs(parent) || path.Clean(parent) != parent || parent == "/" {
		return nil, fmt.Errorf("cgroup parent %q: want an absolute, clean path below the root", parent)
	}
	mounts, err := hierarchies(host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, m := range mounts {
		top := filepath.Join(m, parent)
		pods, err := filepath.Glob(filepath.Join(top, "pod*"))
		if err != nil {
			return removed, err
		}
		for _, p := range pods {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
			r, err := removeTree(p)
			removed = append(removed, r...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		// The parent goes when the pods were all it held; another user's cgroup
		// below it keeps it (rmdir refuses).
		if err := os.Remove(top); err == nil {
			removed = append(removed, top)
		}
	}
	return removed, errors.Join(errs...)
}

// hierarchies lists the mount points of the host's cgroup hierarchies, each once.
func hierarchies(host cgroup.Host) ([]string, error) {
	if host.Mode == cgroup.Unified {
		return []string{host.Root}, nil
	}
	entries, err := os.ReadDir(host.Root)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		dir, err := filepath.EvalSymlinks(filepath.Join(host.Root, e.Name()))
		if err != nil || seen[dir] {
			continue // cpu -> cpu,cpuacct is the same hierarchy
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			continue
		}
		seen[dir] = true
		out = append(out, dir)
	}
	return out, nil
}

// removeTree removes the cgroup at dir and every cgroup below it that holds no
// process, deepest first.
func removeTree(dir string) (removed []string, err error) {
	var dirs []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		procs, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n := len(strings.Fields(string(procs))); n > 0 {
			errs = append(errs, fmt.Errorf("cgroup %s still holds %d processes: kept (stop its pod first)", dirs[i], n))
			continue
		}
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A cgroup kept below it (it holds a process) is already reported.
			if !errors.Is(err, unix.EBUSY) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
			continue
		}
		removed = append(removed, dirs[i])
	}
	return removed, errors.Join(errs...)
}
