//go:build !linux

package sysinfo

import (
	"errors"
	"runtime"
)

var errNotLinux = errors.New("sysinfo: only implemented on Linux")

// KernelRelease is only implemented on Linux.
func KernelRelease() (string, error) { return "", errNotLinux }

// CPUCount returns runtime.NumCPU outside Linux.
func CPUCount() int { return runtime.NumCPU() }

// FilesystemStats is only implemented on Linux.
func FilesystemStats(path string) (Filesystem, error) { return Filesystem{}, errNotLinux }
