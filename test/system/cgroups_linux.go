package system

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// machineCgroups is one uniquely named cgroup in every hierarchy of the host, below the
// test process's own cgroup in each. systemd-nspawn is started inside them, so the
// machine's cgroup namespace is rooted there and everything the machine creates (its
// systemd's units, plinthd's pod cgroups, runc's container cgroups) stays below them.
//
// Without this, nspawn started outside a systemd-managed scope puts its payload and
// supervisor cgroups at the root of the host's hierarchies under fixed names, where two
// machines (or two engineers' tests) would collide.
type machineCgroups struct {
	dirs []string // absolute directories, one per hierarchy
	v2   string   // the one in the cgroup v2 tree, for cgroup.kill
}

// newMachineCgroups creates <own cgroup>/<name> in every mounted hierarchy.
func newMachineCgroups(name string) (*machineCgroups, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	m := &machineCgroups{}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		mount, ok := mounts[parts[1]]
		if !ok {
			continue // a hierarchy not mounted here
		}
		dir := filepath.Join(mount, parts[2], name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			m.remove()
			return nil, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		m.dirs = append(m.dirs, dir)
		if parts[1] == "" {
			m.v2 = dir
		}
		if slices.Contains(strings.Split(parts[1], ","), "cpuset") {
			// A v1 cpuset cgroup takes no task until it has CPUs and memory nodes.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, f), v, 0o644)
				}
				if err != nil {
					m.remove()
					return nil, fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
				}
			}
		}
	}
	if len(m.dirs) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	return m, nil
}

// procsFiles lists the cgroup.procs files a process writes its pid to to join them all.
func (m *machineCgroups) procsFiles() []string {
	files := make([]string, len(m.dirs))
	for i, d := range m.dirs {
		files[i] = filepath.Join(d, "cgroup.procs")
	}
	return files
}

// kill kills every process left in the machine's cgroups: through cgroup.kill in the v2
// tree (which holds every process of the machine), else by pid from each hierarchy.
func (m *machineCgroups) kill() {
	if m.v2 != "" {
		if err := os.WriteFile(filepath.Join(m.v2, "cgroup.kill"), []byte("1"), 0o644); err == nil {
			return
		}
	}
	for _, d := range m.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// remove removes the machine's cgroups and everything below them, deepest first,
// retrying while killed processes are still leaving them. It returns what it could not
// remove.
func (m *machineCgroups) remove() error {
	var errs []error
	for _, d := range m.dirs {
		var subdirs []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				subdirs = append(subdirs, p)
			}
			return nil
		})
		slices.Reverse(subdirs) // children before parents
		for _, s := range subdirs {
			var err error
			for range 50 {
				if err = os.Remove(s); err == nil || errors.Is(err, fs.ErrNotExist) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupMounts maps each hierarchy, named as /proc/self/cgroup names it (the
// comma-separated controllers, name=systemd, or "" for cgroup v2), to where it is
// mounted under /sys/fs/cgroup.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mounts := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, after := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(after) < 3 || fields[3] != "/" || !strings.HasPrefix(fields[4], "/sys/fs/cgroup") {
			continue
		}
		switch after[0] {
		case "cgroup2":
			mounts[""] = fields[4]
		case "cgroup":
			var names []string
			for _, o := range strings.Split(after[2], ",") {
				switch o {
				case "rw", "ro", "nosuid", "nodev", "noexec", "relatime", "noatime", "clone_children", "xattr", "cpuset_v2_mode", "noprefix", "favordynmods":
				default:
					if !strings.HasPrefix(o, "release_agent=") {
						names = append(names, o)
					}
				}
			}
			// /proc/self/cgroup lists a hierarchy's controllers in the kernel's order,
			// which is the order of the superblock options too.
			mounts[strings.Join(names, ",")] = fields[4]
		}
	}
	return mounts, sc.Err()
}
