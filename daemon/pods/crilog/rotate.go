package crilog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// kubelet's defaults for containerLogMaxSize and containerLogMaxFiles.
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxFiles = 5
)

// RotatingFile is a log file that is rotated by size: once a write would take it past
// maxBytes it is renamed to <path>.<UTC time> and a new one started, and only the
// newest maxFiles files (the live one included) are kept. Writes are whole records (the
// Writer's), so no record is split across files. It is not safe for concurrent use;
// the Writer serialises its writes.
type RotatingFile struct {
	path     string
	maxBytes int64
	maxFiles int
	now      func() time.Time
	f        *os.File
	size     int64
}

// OpenRotating opens (appending) or creates path. maxBytes <= 0 never rotates;
// maxFiles < 2 keeps only the live file.
func OpenRotating(path string, maxBytes int64, maxFiles int, now func() time.Time) (*RotatingFile, error) {
	r := &RotatingFile{path: path, maxBytes: maxBytes, maxFiles: max(maxFiles, 1), now: now}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write appends p, rotating first if p would take the file past maxBytes.
func (r *RotatingFile) Write(p []byte) (int, error) {
	if r.maxBytes > 0 && r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *RotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	rotated := r.path + "." + r.now().UTC().Format("20060102-150405.000000000")
	if err := os.Rename(r.path, rotated); err != nil {
		return fmt.Errorf("rotate %s: %w", r.path, err)
	}
	if err := r.open(); err != nil {
		return err
	}
	return r.prune()
}

// prune removes the oldest rotated files beyond maxFiles-1 (the timestamps sort in
// time order).
func (r *RotatingFile) prune() error {
	matches, err := filepath.Glob(r.path + ".*")
	if err != nil {
		return err
	}
	var rotated []string
	for _, m := range matches {
		if !strings.HasSuffix(m, ".tmp") {
			rotated = append(rotated, m)
		}
	}
	slices.Sort(rotated)
	var errs []error
	for len(rotated) > r.maxFiles-1 {
		if err := os.Remove(rotated[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		rotated = rotated[1:]
	}
	return errors.Join(errs...)
}

// Sync flushes the live file to disk.
func (r *RotatingFile) Sync() error { return r.f.Sync() }

// Close closes the live file.
func (r *RotatingFile) Close() error { return r.f.Close() }
