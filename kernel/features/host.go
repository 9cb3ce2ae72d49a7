package features

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/plinth/plinth/kernel/cgroup"
)

// Sysctl reads a sysctl by its dotted name (net.ipv4.ip_forward) under /proc/sys.
// Names with a dot inside a component (an interface name) cannot be read this way.
func (s *System) Sysctl(name string) (string, error) {
	if name == "" || strings.Contains(name, "/") || strings.Contains(name, "..") {
		return "", fmt.Errorf("sysctl %q: want a dotted name such as net.ipv4.ip_forward", name)
	}
	b, err := s.ReadFile(filepath.Join(s.ProcDir, "sys", strings.ReplaceAll(name, ".", "/")))
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// SwapDevice is one line of /proc/swaps.
type SwapDevice struct {
	Filename string
	Type     string // partition or file
	// SizeBytes and UsedBytes are the kernel's KiB figures in bytes.
	SizeBytes, UsedBytes uint64
	Priority             int
}

// Swap lists the active swap areas from /proc/swaps; none means swap is off.
func (s *System) Swap() ([]SwapDevice, error) {
	p := filepath.Join(s.ProcDir, "swaps")
	b, err := s.ReadFile(p)
	if err != nil {
		return nil, err
	}
	devs, err := ParseSwaps(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return devs, nil
}

// ParseSwaps reads /proc/swaps: a header line, then "Filename Type Size Used Priority"
// with sizes in KiB. The kernel escapes spaces in file names as \040, so the fields
// split on whitespace.
func ParseSwaps(text string) ([]SwapDevice, error) {
	var out []SwapDevice
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if line == 1 && len(f) > 0 && f[0] == "Filename" {
			continue
		}
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d: %q: want Filename Type Size Used Priority", line, sc.Text())
		}
		d := SwapDevice{Filename: f[0], Type: f[1]}
		var err error
		if d.SizeBytes, err = kib(f[2]); err != nil {
			return nil, fmt.Errorf("line %d: size %q: %w", line, f[2], err)
		}
		if d.UsedBytes, err = kib(f[3]); err != nil {
			return nil, fmt.Errorf("line %d: used %q: %w", line, f[3], err)
		}
		if d.Priority, err = strconv.Atoi(f[4]); err != nil {
			return nil, fmt.Errorf("line %d: priority %q: %w", line, f[4], err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

func kib(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n > (1<<64-1)/1024 {
		return 0, errors.New("overflows a 64-bit byte count")
	}
	return n * 1024, nil
}

// SwapTotal is the size of every swap area together.
func SwapTotal(devs []SwapDevice) uint64 {
	var t uint64
	for _, d := range devs {
		t += d.SizeBytes
	}
	return t
}

// CgroupControllers lists the controllers a mode offers: on unified hosts the root's
// cgroup.controllers, else the v1 controllers /proc/cgroups lists as enabled.
func (s *System) CgroupControllers(m cgroup.Mode) ([]string, error) {
	if m == cgroup.Unified {
		p := filepath.Join(s.CgroupRoot, "cgroup.controllers")
		b, err := s.ReadFile(p)
		if err != nil {
			return nil, err
		}
		return strings.Fields(string(b)), nil
	}
	p := filepath.Join(s.ProcDir, "cgroups")
	b, err := s.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// #subsys_name hierarchy num_cgroups enabled
		f := strings.Fields(line)
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") && f[3] == "1" {
			out = append(out, f[0])
		}
	}
	slices.Sort(out)
	return out, nil
}

// SwapAccounting tells whether containers' swap use can be limited: on unified hosts
// a cgroup has memory.swap.max (the root never has one, so the probe looks at the
// root's child cgroups), elsewhere the v1 memory hierarchy has
// memory.memsw.limit_in_bytes (absent when the kernel lacks swap accounting or was
// booted with swapaccount=0).
func (s *System) SwapAccounting(m cgroup.Mode) Result {
	r := Result{Name: "swap accounting"}
	if m == cgroup.Unified {
		entries, err := os.ReadDir(s.CgroupRoot)
		if err != nil {
			r.Reason = err.Error()
			return r
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(s.CgroupRoot, e.Name(), "memory.swap.max")
			if _, err := os.Stat(p); err == nil {
				r.Available, r.Reason = true, "cgroup v2 memory.swap.max ("+p+")"
				return r
			}
		}
		r.Reason = fmt.Sprintf("no memory.swap.max in the cgroups under %s: the memory controller is not enabled for them, or the kernel lacks swap accounting (CONFIG_MEMCG_SWAP)", s.CgroupRoot)
		return r
	}
	p := filepath.Join(s.CgroupRoot, "memory", "memory.memsw.limit_in_bytes")
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			r.Reason = fmt.Sprintf("no %s: swap accounting is off (swapaccount=1 on the kernel command line turns it on)", p)
		} else {
			r.Reason = err.Error()
		}
		return r
	}
	r.Available, r.Reason = true, "cgroup v1 memory.memsw.limit_in_bytes"
	return r
}

// UserNamespaces tells whether unprivileged user namespaces can be created
// (user.max_user_namespaces above 0 and the kernel built with CONFIG_USER_NS).
func (s *System) UserNamespaces() Result {
	r := Result{Name: "user namespaces"}
	v, err := s.Sysctl("user.max_user_namespaces")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Reason = "no user.max_user_namespaces: kernel built without CONFIG_USER_NS"
	case err != nil:
		r.Reason = err.Error()
	case v == "0":
		r.Reason = "user.max_user_namespaces is 0"
	default:
		r.Available, r.Reason = true, "user.max_user_namespaces="+v
	}
	return r
}

// Conntrack tells whether connection tracking is there (nf_conntrack built in or
// loaded): the Service proxy's NAT and its deletion of stale UDP flows need it.
func (s *System) Conntrack() Result {
	r := Result{Name: "conntrack"}
	v, err := s.Sysctl("net.netfilter.nf_conntrack_max")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			r.Reason = "no net.netfilter.nf_conntrack_max: nf_conntrack is neither built in nor loaded"
		} else {
			r.Reason = err.Error()
		}
		return r
	}
	r.Available, r.Reason = true, "nf_conntrack_max="+v
	return r
}
