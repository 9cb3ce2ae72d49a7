//go:build linux

package runc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// startTicks returns a process's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which tells a process from a later one that reuses its pid.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStartTicks(string(b))
}

func parseStartTicks(stat string) (uint64, error) {
	// The command name (field 2) may contain spaces and parentheses: fields are
	// counted from after its last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %q: no command field", stat)
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("stat: %d fields after the command, want at least 20", len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// waitProcess blocks until the process pid, started at ticks, has exited, or ctx is
// done. A process already gone (or replaced by another with the same pid) counts as
// exited. It parks on the pidfd in the runtime's poller, not on an OS thread.
func waitProcess(ctx context.Context, pid int, ticks uint64) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	// The pidfd refers to whatever has pid now; if that is not our process, ours is gone.
	if got, err := startTicks(pid); err != nil || got != ticks {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return err == nil && n > 0 // false: park until the pidfd is readable
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
