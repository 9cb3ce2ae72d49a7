//go:build linux

package staticpods

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The real inotify watcher signals a file written into the directory, and closes its
// channel when the directory is removed (so the Source watches it again later).
func TestInotifyWatcher(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := watchDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	// The bound is not the feature, only a guard against hanging: notifications take
	// microseconds.
	select {
	case _, ok := <-w.Events():
		if !ok {
			t.Fatal("the watch ended on a write")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification for a written file")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the watch did not end when the directory was removed")
		}
	}
}

func TestInotifyWatcherMissingDirectory(t *testing.T) {
	if _, err := watchDir(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Fatal("watching a missing directory succeeded")
	}
}

// Close wakes the reading goroutine and waits for it, with no notification pending.
func TestInotifyWatcherClose(t *testing.T) {
	w, err := watchDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Events(); ok {
		t.Fatal("events still open after Close")
	}
}
