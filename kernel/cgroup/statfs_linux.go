//go:build linux

package cgroup

import (
	"golang.org/x/sys/unix"
)

// HostStatfs returns the filesystem magic of path on the running kernel.
func HostStatfs(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}
