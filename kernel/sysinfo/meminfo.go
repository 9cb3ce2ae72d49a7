package sysinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Meminfo holds the /proc/meminfo fields the node reports, in bytes.
type Meminfo struct {
	MemTotal uint64
	MemFree  uint64
	// MemAvailable is 0 on kernels older than 3.14, which lack the field.
	MemAvailable uint64
}

// ParseMeminfo reads /proc/meminfo content. MemTotal must be present; the other fields
// are optional. Values are converted from the kernel's kB (KiB) to bytes. Lines for
// fields it does not keep are not validated, so a new kernel field format cannot break
// it.
func ParseMeminfo(r io.Reader) (Meminfo, error) {
	var m Meminfo
	var sawTotal bool
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "MemTotal":
			dst, sawTotal = &m.MemTotal, true
		case "MemFree":
			dst = &m.MemFree
		case "MemAvailable":
			dst = &m.MemAvailable
		default:
			continue
		}
		v, err := parseKB(rest)
		if err != nil {
			return Meminfo{}, fmt.Errorf("line %d: %s: %w", lineNo, name, err)
		}
		*dst = v
	}
	if err := sc.Err(); err != nil {
		return Meminfo{}, err
	}
	if !sawTotal {
		return Meminfo{}, errors.New("no MemTotal line")
	}
	return m, nil
}

// parseKB turns "   16318412 kB" into bytes.
func parseKB(field string) (uint64, error) {
	parts := strings.Fields(field)
	if len(parts) != 2 || parts[1] != "kB" {
		return 0, fmt.Errorf("value %q is not \"<number> kB\"", strings.TrimSpace(field))
	}
	kb, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number of kB: %w", parts[0], err)
	}
	if kb > (1<<64-1)/1024 {
		return 0, fmt.Errorf("value %s kB overflows a 64-bit byte count", parts[0])
	}
	return kb * 1024, nil
}
