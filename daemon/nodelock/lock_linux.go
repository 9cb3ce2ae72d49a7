package nodelock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrHeld is wrapped by the error Acquire returns when another process (or another
// open of the same file in this process) holds the lock.
var ErrHeld = errors.New("node lock is held")

// HeldError says who holds the lock. errors.Is(err, ErrHeld) is true for it.
type HeldError struct {
	Path string
	PID  int // 0 when the file held no readable pid
}

func (e *HeldError) Error() string {
	holder := "unknown pid"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("lock file %s is held by another plinthd (%s); stop it first", e.Path, holder)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock is a held node lock. Release it, or let process exit release it.
type Lock struct {
	path string
	mu   sync.Mutex
	f    *os.File // nil after Release
}

// Acquire takes the lock at path without waiting: it creates the parent directory
// (0755) and the file (0644) if needed, locks it exclusively, and writes "<pid>\n".
// When another holder has it, the error is a *HeldError wrapping ErrHeld.
func Acquire(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the directory of lock file %s: %w", path, err)
	}
	// os.OpenFile sets O_CLOEXEC.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := flockNoWait(f); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &HeldError{Path: path, PID: readPID(f)}
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := writePID(f, os.Getpid()); err != nil {
		f.Close() // also drops the lock
		return nil, fmt.Errorf("writing pid to lock file %s: %w", path, err)
	}
	return &Lock{path: path, f: f}, nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release empties the file (so no stale pid is left behind) and drops the lock. The
// file itself stays: removing it would let two processes lock two different inodes
// of the same name. Calling Release again does nothing.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	truncErr := f.Truncate(0)
	closeErr := f.Close() // closing the last descriptor drops the flock
	if err := errors.Join(truncErr, closeErr); err != nil {
		return fmt.Errorf("releasing lock file %s: %w", l.path, err)
	}
	return nil
}

func flockNoWait(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

func writePID(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0)
	return err
}

// readPID returns the pid the holder wrote, or 0 when there is none to read (the
// holder may be between truncating and writing, or the file holds something else).
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Check reports an error when the lock no longer guards the node: the file at Path was
// removed or replaced (by a cleaner of /run, say), so a second plinthd could lock a new
// file of the same name. plinthd makes this a health check, so the systemd watchdog
// restarts it and the restart takes the lock again.
func (l *Lock) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("lock file %s: released", l.path)
	}
	var held, onDisk unix.Stat_t
	if err := unix.Fstat(int(l.f.Fd()), &held); err != nil {
		return fmt.Errorf("lock file %s: %w", l.path, err)
	}
	if err := unix.Stat(l.path, &onDisk); err != nil {
		return fmt.Errorf("lock file %s was removed while held; another plinthd could start: %w", l.path, err)
	}
	if held.Dev != onDisk.Dev || held.Ino != onDisk.Ino {
		return fmt.Errorf("lock file %s was replaced while held; another plinthd could start", l.path)
	}
	return nil
}
