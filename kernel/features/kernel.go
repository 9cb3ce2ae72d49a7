package features

import (
	"fmt"
	"strconv"
	"strings"
)

// KernelVersion is the numeric part of a kernel release such as "6.18.44-fc-v769".
type KernelVersion struct {
	Major, Minor, Patch int
	// Release is the whole string as uname -r prints it.
	Release string
}

// ParseKernelRelease reads major.minor[.patch] from the start of a kernel release; what
// follows (a "-" or "+" suffix, "-rc3", a distribution tag) is kept only in Release.
func ParseKernelRelease(release string) (KernelVersion, error) {
	v := KernelVersion{Release: release}
	// The numeric part ends at the first character that is neither a digit nor a dot.
	end := strings.IndexFunc(release, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(release)
	}
	parts := strings.Split(strings.TrimSuffix(release[:end], "."), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return KernelVersion{}, fmt.Errorf("kernel release %q: want major.minor[.patch] at the start", release)
	}
	dst := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<20 {
			return KernelVersion{}, fmt.Errorf("kernel release %q: %q is not a version number", release, p)
		}
		*dst[i] = n
	}
	return v, nil
}

// AtLeast reports whether the kernel is major.minor or newer.
func (v KernelVersion) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// String prints major.minor.patch.
func (v KernelVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }
