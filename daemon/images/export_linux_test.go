package images

import "golang.org/x/sys/unix"

func unmountForTest(path string) error { return unix.Unmount(path, 0) }

func mountForTest(source, target, fstype, data string) error {
	return unix.Mount(source, target, fstype, 0, data)
}

func mkdir(p string) error { return unix.Mkdir(p, 0o755) }
