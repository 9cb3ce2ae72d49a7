package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcCgroups is the content of /proc/<pid>/cgroup: the process's cgroup in each v1
// hierarchy and in the v2 tree.
type ProcCgroups struct {
	// V1 maps each v1 controller ("memory", "cpu", ...) or named hierarchy
	// ("name=systemd") to the cgroup path. Co-mounted controllers ("cpu,cpuacct") get
	// one entry each.
	V1 map[string]string
	// Unified is the path from the "0::" line; HasUnified is false when there is none.
	Unified    string
	HasUnified bool
}

// For returns the process's cgroup path in the hierarchy carrying controller: its v1
// hierarchy when one is mounted for it, else the v2 tree. An empty controller asks for
// the v2 tree (where per-cgroup PSI lives on hybrid hosts).
func (p ProcCgroups) For(controller string) (string, bool) {
	if controller != "" {
		if v, ok := p.V1[controller]; ok {
			return v, true
		}
	}
	return p.Unified, p.HasUnified
}

// ParseProcCgroup reads /proc/<pid>/cgroup lines of the form
// "hierarchy-ID:controller-list:path", such as "4:memory:/kubepods/pod1",
// "1:cpu,cpuacct:/", "9:name=systemd:/" and "0::/user.slice". Errors name the line.
func ParseProcCgroup(r io.Reader) (ProcCgroups, error) {
	p := ProcCgroups{V1: map[string]string{}}
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, cgPath, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return ProcCgroups{}, fmt.Errorf("line %d: %q: want hierarchy-ID:controllers:path", lineNo, truncate(line))
		}
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return ProcCgroups{}, fmt.Errorf("line %d: hierarchy ID %q is not a number", lineNo, truncate(id))
		}
		// The kernel prints paths as they are; a path outside the reader's cgroup
		// namespace shows up as "/../x", which checkPath would refuse, so only the
		// leading slash is required here.
		if !strings.HasPrefix(cgPath, "/") {
			return ProcCgroups{}, fmt.Errorf("line %d: cgroup path %q does not start with /", lineNo, truncate(cgPath))
		}
		if n == 0 {
			if ctrls != "" {
				return ProcCgroups{}, fmt.Errorf("line %d: hierarchy 0 (cgroup v2) lists controllers %q; want none", lineNo, truncate(ctrls))
			}
			if p.HasUnified {
				return ProcCgroups{}, fmt.Errorf("line %d: second cgroup v2 (0::) line", lineNo)
			}
			p.Unified, p.HasUnified = cgPath, true
			continue
		}
		if ctrls == "" {
			return ProcCgroups{}, fmt.Errorf("line %d: v1 hierarchy %d lists no controllers", lineNo, n)
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "" {
				return ProcCgroups{}, fmt.Errorf("line %d: empty controller name in %q", lineNo, truncate(ctrls))
			}
			if _, dup := p.V1[c]; dup {
				return ProcCgroups{}, fmt.Errorf("line %d: controller %q listed twice", lineNo, truncate(c))
			}
			p.V1[c] = cgPath
		}
	}
	if err := sc.Err(); err != nil {
		return ProcCgroups{}, err
	}
	if len(p.V1) == 0 && !p.HasUnified {
		return ProcCgroups{}, errors.New("no cgroup lines")
	}
	return p, nil
}

// ProcessCgroups reads and parses /proc/<pid>/cgroup.
func (h Host) ProcessCgroups(pid int) (ProcCgroups, error) {
	if pid <= 0 {
		return ProcCgroups{}, fmt.Errorf("process cgroups: pid %d: want a positive pid", pid)
	}
	file := filepath.Join(h.procDir(), strconv.Itoa(pid), "cgroup")
	b, err := os.ReadFile(file)
	if err != nil {
		return ProcCgroups{}, err
	}
	p, err := ParseProcCgroup(bytes.NewReader(b))
	if err != nil {
		return ProcCgroups{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

func (h Host) procDir() string {
	if h.ProcDir == "" {
		return "/proc"
	}
	return h.ProcDir
}

// truncate keeps error messages readable when the input is garbage.
func truncate(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
