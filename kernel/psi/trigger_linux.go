//go:build linux

package psi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// triggerSys holds the trigger's pressure file and the eventfd that wakes a blocked
// poll when ctx is cancelled or the trigger is closed.
type triggerSys struct {
	fd   int
	wake int
}

// NewTrigger arms a PSI trigger on a pressure file (/proc/pressure/<res> or a cgroup v2
// <res>.pressure): it fires when tasks stall (kind) for more than stall within any
// window. The window must be 500 ms to 10 s and stall at most the window; without
// CAP_SYS_RESOURCE it must also be a multiple of 2 s (see PrivilegedTriggers). It needs
// write access to the file.
func NewTrigger(path string, kind StallKind, stall, window time.Duration, opts ...TriggerOption) (*Trigger, error) {
	spec, err := TriggerSpec(kind, stall, window)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if window%UnprivilegedWindowStep != 0 && !PrivilegedTriggers() {
		return nil, fmt.Errorf("%s: psi trigger: window %v: without CAP_SYS_RESOURCE (which this process lacks) the kernel accepts only multiples of %v", path, window, UnprivilegedWindowStep)
	}
	o := newTriggerOptions(opts)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("psi trigger: open %s: %w", path, err)
	}
	// The kernel replaces the last byte written with a NUL, so the NUL is sent too.
	if _, err := unix.Write(fd, append([]byte(spec), 0)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("psi trigger: arm %q on %s: %w%s", spec, path, err, armHint(err))
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("psi trigger: eventfd: %w", err)
	}
	return &Trigger{path: path, spec: spec, clock: o.clock, sys: triggerSys{fd: fd, wake: wake}}, nil
}

// PrivilegedTriggers reports whether this process has CAP_SYS_RESOURCE, which the kernel
// needs for trigger windows that are not multiples of 2 s. Such triggers are checked by
// a dedicated kernel thread as stall accrues; unprivileged ones only by the averaging
// work that runs every 2 s, so they fire up to about 2 s later. Root without the
// capability (a sandbox that drops it) is unprivileged here.
func PrivilegedTriggers() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_RESOURCE/32].Effective&(1<<(unix.CAP_SYS_RESOURCE%32)) != 0
}

func armHint(err error) string {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return " (PSI is disabled: boot with psi=1)"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return " (needs write access to the file)"
	}
	return ""
}

// Wait blocks until the trigger fires (nil), ctx is done (ctx.Err()), the trigger is
// closed (ErrClosed) or the kernel drops it (an error wrapping ErrGone).
func (t *Trigger) Wait(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, t.wakeup)
	defer stop()
	fds := []unix.PollFd{
		{Fd: int32(t.sys.fd), Events: unix.POLLPRI},
		{Fd: int32(t.sys.wake), Events: unix.POLLIN},
	}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("psi trigger on %s: poll: %w", t.path, err)
		}
		if fds[1].Revents&unix.POLLIN != 0 {
			t.drainWake()
			if t.closed.Load() {
				return ErrClosed
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			// A wake-up left over from an earlier Wait's context: keep waiting.
		}
		// A removed cgroup's file polls as POLLERR|POLLPRI, so errors are checked first.
		if r := fds[0].Revents; r&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
			return fmt.Errorf("psi trigger on %s: poll returned %s (the cgroup was removed?): %w", t.path, pollFlags(r), ErrGone)
		}
		if fds[0].Revents&unix.POLLPRI != 0 {
			return nil
		}
	}
}

// Close disarms the trigger and releases its file descriptors. A blocked Wait returns
// ErrClosed. Closing twice is harmless.
func (t *Trigger) Close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return nil
	}
	t.wakeup()
	t.mu.Lock() // a running Wait sees closed and returns
	defer t.mu.Unlock()
	return errors.Join(unix.Close(t.sys.fd), unix.Close(t.sys.wake))
}

func (t *Trigger) wakeup() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	// EAGAIN only when the counter is near overflow, when a wake-up is pending anyway.
	_, _ = unix.Write(t.sys.wake, one[:])
}

func (t *Trigger) drainWake() {
	var buf [8]byte
	_, _ = unix.Read(t.sys.wake, buf[:])
}

func pollFlags(r int16) string {
	var names []string
	for _, f := range []struct {
		bit  int16
		name string
	}{{unix.POLLIN, "POLLIN"}, {unix.POLLPRI, "POLLPRI"}, {unix.POLLOUT, "POLLOUT"}, {unix.POLLERR, "POLLERR"}, {unix.POLLHUP, "POLLHUP"}, {unix.POLLNVAL, "POLLNVAL"}} {
		if r&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}
