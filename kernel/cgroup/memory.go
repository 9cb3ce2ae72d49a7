package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/plinth/plinth/kernel/sysinfo"
)

// Unlimited is the LimitBytes or Max of a cgroup without a limit.
const Unlimited = math.MaxUint64

// v1UnlimitedFloor: cgroup v1 prints "no limit" as PAGE_COUNTER_MAX pages in bytes
// (9223372036854771712 on 4 KiB pages); anything this large is no limit in practice.
const v1UnlimitedFloor = 1 << 62

// Memory is a cgroup's memory use, in bytes, as kubelet sees it.
type Memory struct {
	UsageBytes        uint64
	InactiveFileBytes uint64
	// WorkingSetBytes is usage minus inactive file pages (0 if that is negative): what
	// kubelet compares with the limit, since inactive file pages are reclaimed first.
	WorkingSetBytes uint64
	// LimitBytes is Unlimited when the cgroup has no limit of its own. For the root it
	// is always Unlimited.
	LimitBytes uint64
}

func (m *Memory) setWorkingSet() {
	if m.UsageBytes > m.InactiveFileBytes {
		m.WorkingSetBytes = m.UsageBytes - m.InactiveFileBytes
	}
}

// Memory reads the memory use of the cgroup at cgroupPath ("/" is the node's root,
// which NodeMemory reads). v2: memory.current and inactive_file from memory.stat, limit
// from memory.max. v1: memory.usage_in_bytes and total_inactive_file (the hierarchical
// count, like kubelet), limit from memory.limit_in_bytes.
func (h Host) Memory(cgroupPath string) (Memory, error) {
	if cgroupPath == "/" {
		return h.NodeMemory()
	}
	dir, err := h.Dir("memory", cgroupPath)
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	if h.memoryIsV2(dir) {
		if m.UsageBytes, err = readUint(dir, "memory.current"); err != nil {
			return Memory{}, err
		}
		if m.InactiveFileBytes, err = readStatKey(dir, "memory.stat", "inactive_file"); err != nil {
			return Memory{}, err
		}
		if m.LimitBytes, err = readLimit(dir, "memory.max"); err != nil {
			return Memory{}, err
		}
	} else {
		if m.UsageBytes, err = readUint(dir, "memory.usage_in_bytes"); err != nil {
			return Memory{}, err
		}
		if m.InactiveFileBytes, err = readStatKey(dir, "memory.stat", "total_inactive_file"); err != nil {
			return Memory{}, err
		}
		if m.LimitBytes, err = readLimit(dir, "memory.limit_in_bytes"); err != nil {
			return Memory{}, err
		}
	}
	m.setWorkingSet()
	return m, nil
}

// NodeMemory reads the memory use of the whole node from the root cgroup, as kubelet
// computes the node's working set. v1 keeps usage in the root's memory.usage_in_bytes.
// The v2 root has no memory.current, so usage is MemTotal minus MemFree from
// /proc/meminfo (what cAdvisor does), with inactive_file from the root's memory.stat.
func (h Host) NodeMemory() (Memory, error) {
	base, err := h.ControllerDir("memory")
	if err != nil {
		return Memory{}, err
	}
	m := Memory{LimitBytes: Unlimited}
	if h.memoryIsV2(base) {
		file := filepath.Join(h.procDir(), "meminfo")
		f, err := os.Open(file)
		if err != nil {
			return Memory{}, err
		}
		defer f.Close()
		mi, err := sysinfo.ParseMeminfo(f)
		if err != nil {
			return Memory{}, fmt.Errorf("%s: %w", file, err)
		}
		m.UsageBytes = mi.MemTotal - min(mi.MemFree, mi.MemTotal)
		if m.InactiveFileBytes, err = readStatKey(base, "memory.stat", "inactive_file"); err != nil {
			return Memory{}, err
		}
	} else {
		if m.UsageBytes, err = readUint(base, "memory.usage_in_bytes"); err != nil {
			return Memory{}, err
		}
		if m.InactiveFileBytes, err = readStatKey(base, "memory.stat", "total_inactive_file"); err != nil {
			return Memory{}, err
		}
	}
	m.setWorkingSet()
	return m, nil
}

// memoryIsV2 tells whether dir is in the v2 tree, which is where the memory controller
// lives on unified hosts (and on a hybrid host without a v1 memory hierarchy).
func (h Host) memoryIsV2(dir string) bool {
	u := h.UnifiedDir()
	return u != "" && (dir == u || strings.HasPrefix(dir, u+"/"))
}

// readUint reads a file holding one unsigned number.
func readUint(dir, name string) (uint64, error) {
	return sysinfo.ReadUint(filepath.Join(dir, name))
}

// readLimit reads a limit file: a number, "max" (v2) or v1's huge "no limit" value,
// both returned as Unlimited.
func readLimit(dir, name string) (uint64, error) {
	file := filepath.Join(dir, name)
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return Unlimited, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is neither a number nor \"max\"", file, truncate(s))
	}
	if v >= v1UnlimitedFloor {
		return Unlimited, nil
	}
	return v, nil
}

// readStatKey returns one key of a flat keyed file such as memory.stat.
func readStatKey(dir, name, key string) (uint64, error) {
	file := filepath.Join(dir, name)
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	stat, err := ParseFlatKeyed(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	v, ok := stat[key]
	if !ok {
		return 0, fmt.Errorf("%s: no %q line", file, key)
	}
	return v, nil
}

// ParseFlatKeyed reads a cgroup "flat keyed" file ("key value" per line, such as
// memory.stat or cpu.stat) into a map. Errors name the line and the key.
func ParseFlatKeyed(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: %q: want \"key value\"", lineNo, truncate(line))
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q: %q is not an unsigned number", lineNo, truncate(key), truncate(val))
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: key %q appears twice", lineNo, truncate(key))
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
