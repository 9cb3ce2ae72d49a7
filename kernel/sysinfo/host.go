package sysinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Host reads node facts from files under Root.
type Host struct {
	// Root is prepended to every file path; "" or "/" reads the running system. Tests
	// point it at a fixture tree.
	Root string
}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// Meminfo reads and parses /proc/meminfo.
func (h Host) Meminfo() (Meminfo, error) {
	p := h.path("/proc/meminfo")
	f, err := os.Open(p)
	if err != nil {
		return Meminfo{}, err
	}
	defer f.Close()
	m, err := ParseMeminfo(f)
	if err != nil {
		return Meminfo{}, fmt.Errorf("%s: %w", p, err)
	}
	return m, nil
}

// OSImage returns PRETTY_NAME from /etc/os-release, falling back to
// /usr/lib/os-release when the former does not exist, as os-release(5) prescribes.
func (h Host) OSImage() (string, error) {
	var lastErr error
	for _, p := range []string{h.path("/etc/os-release"), h.path("/usr/lib/os-release")} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			lastErr = err
			continue
		}
		if err != nil {
			return "", err
		}
		vars, err := ParseOSRelease(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		return PrettyName(vars), nil
	}
	return "", fmt.Errorf("no os-release file: %w", lastErr)
}

// MachineID returns the 32-hex-digit ID in /etc/machine-id (machine-id(5)).
func (h Host) MachineID() (string, error) {
	p := h.path("/etc/machine-id")
	id, err := readTrimmed(p)
	if err != nil {
		return "", err
	}
	if !isHex(id, 32) {
		return "", fmt.Errorf("%s: %q is not a machine ID (32 hexadecimal digits)", p, id)
	}
	return id, nil
}

// BootID returns the random UUID the kernel picked for this boot.
func (h Host) BootID() (string, error) {
	return readNonEmpty(h.path("/proc/sys/kernel/random/boot_id"))
}

// SystemUUID returns the firmware's system UUID from DMI. It is readable only by root
// and absent on machines without DMI (many VMs and non-x86 boards), so callers treat an
// error as "unknown".
func (h Host) SystemUUID() (string, error) {
	return readNonEmpty(h.path("/sys/class/dmi/id/product_uuid"))
}

func readTrimmed(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readNonEmpty(p string) (string, error) {
	s, err := readTrimmed(p)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", fmt.Errorf("%s: file is empty", p)
	}
	return s, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
