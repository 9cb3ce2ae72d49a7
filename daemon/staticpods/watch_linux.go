//go:build linux

package staticpods

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"unsafe"

	"golang.org/x/sys/unix"
)

// inotifyWatcher signals changes in one directory: files created (symbolic links make
// no other event), closed after writing, renamed in or out, deleted, or their
// attributes changed. Plain writes (IN_MODIFY) are left out: a manifest is read once
// its writer closes it, not while a large one is half written. Events are coalesced
// into one pending signal, since every change leads to a full re-read. The channel
// closes when the watch ends (the directory was deleted or moved away).
type inotifyWatcher struct {
	file   *os.File
	events chan struct{}
	done   sync.WaitGroup
}

const watchMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_MOVED_FROM |
	unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

func watchDir(dir string) (dirWatcher, error) {
	// Non-blocking, so the os.File reads through Go's poller and Close wakes the reader.
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	w := &inotifyWatcher{file: os.NewFile(uintptr(fd), "inotify:"+dir), events: make(chan struct{}, 1)}
	w.done.Add(1)
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) read() {
	defer w.done.Done()
	defer close(w.events)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			return // closed, or the watch is gone
		}
		ended := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				ended = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		select {
		case w.events <- struct{}{}:
		default: // a signal is already pending
		}
		if ended {
			return
		}
	}
}

func (w *inotifyWatcher) Events() <-chan struct{} { return w.events }

func (w *inotifyWatcher) Close() error {
	err := w.file.Close()
	w.done.Wait()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
