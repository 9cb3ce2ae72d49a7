package sysinfo

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// KernelRelease returns the running kernel's release, as `uname -r` prints it.
func KernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// CPUCount returns how many CPUs this process may run on (sched_getaffinity), which is
// what a node can actually give its pods when plinthd is confined by a cpuset. It
// falls back to runtime.NumCPU if the call fails.
func CPUCount() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		if n := set.Count(); n > 0 {
			return n
		}
	}
	return runtime.NumCPU()
}

// FilesystemStats returns the size and usage of the filesystem holding path.
func FilesystemStats(path string) (Filesystem, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Filesystem{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	// Block counts are in fragment-size units; f_frsize is 0 on old kernels, where
	// f_bsize is the unit (statvfs(3) does the same).
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	return Filesystem{
		CapacityBytes:  st.Blocks * unit,
		AvailableBytes: st.Bavail * unit,
		Inodes:         st.Files,
		InodesFree:     st.Ffree,
	}, nil
}
