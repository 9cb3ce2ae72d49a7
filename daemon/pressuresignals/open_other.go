//go:build !linux

package pressuresignals

import (
	"errors"

	"github.com/plinth/plinth/kernel/sysinfo"
)

var errNotLinux = errors.New("only on Linux")

// HostFiles returns a Host that reads /proc, which exists only on Linux.
func HostFiles() Host {
	return Host{ProcDir: "/proc", CgroupsErr: errNotLinux, Statfs: sysinfo.FilesystemStats}
}

// Open builds the signals from the polled files alone: PSI and BPF are Linux's.
func Open(opts Options) (*Signals, error) {
	deps := Deps{Host: HostFiles(), Unavailable: map[string]error{}}
	for _, feed := range []string{FeedPSI, FeedOOM, FeedReclaim, FeedTasks} {
		deps.Unavailable[feed] = errNotLinux
	}
	return New(opts, deps)
}
