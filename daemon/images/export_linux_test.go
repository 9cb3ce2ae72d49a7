package images

import "golang.org/x/sys/unix"

func unmountForTest(path string) error { return unix.Unmount(path, 0) }
