//go:build !linux

package cgroup

import "errors"

// HostStatfs fails: cgroups exist only on Linux.
func HostStatfs(path string) (int64, error) {
	return 0, errors.New("cgroups need Linux")
}
