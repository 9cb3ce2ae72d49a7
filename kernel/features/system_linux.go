//go:build linux

package features

import "golang.org/x/sys/unix"

// mountFlags are what systemd uses for tracefs and bpffs.
const mountFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

func hostMount(source, target, fstype string, flags uintptr, data string) error {
	return unix.Mount(source, target, fstype, flags, data)
}
