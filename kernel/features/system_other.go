//go:build !linux

package features

import "errors"

const mountFlags = 0

var errNotLinux = errors.New("kernel features are probed on Linux only")

func hostMount(source, target, fstype string, flags uintptr, data string) error {
	return errNotLinux
}
