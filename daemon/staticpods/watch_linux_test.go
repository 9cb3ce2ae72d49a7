//go:build linux

package staticpods

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
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

// The Source over real inotify: a manifest renamed into the directory is read without
// waiting for the period; after the directory is removed and created again, the next
// periodic read watches it anew, and a later file is again read at once.
func TestSourceWithInotify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	updates := make(chan []*corev1.Pod, 10)
	reads := make(chan struct{}, 100)
	s, err := NewSource(SourceConfig{
		Dir: dir, NodeName: "node-a", Clock: clk,
		OnUpdate:  func(pods []*corev1.Pod) { updates <- pods },
		afterRead: func() { reads <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	next := func(what string) []*corev1.Pod {
		t.Helper()
		select {
		case pods := <-updates:
			return pods
		case <-time.After(10 * time.Second):
			t.Fatalf("no update after %s", what)
			return nil
		}
	}
	if pods := next("start"); len(pods) != 0 {
		t.Fatalf("an empty directory gave %v", names(pods))
	}
	place := func(name, content string) {
		t.Helper()
		tmp := filepath.Join(filepath.Dir(dir), name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	place("web.json", webJSON)
	if got := names(next("renaming web.json in")); len(got) != 1 || got[0] != "default/web-node-a" {
		t.Fatalf("pods %v", got)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if pods := next("removing the directory"); len(pods) != 0 {
		t.Fatalf("after removing the directory: %v", names(pods))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for len(reads) > 0 {
		<-reads
	}
	clk.Step(DefaultFileCheckFrequency) // the periodic read sets the watch up again
	select {
	case <-reads:
	case <-time.After(10 * time.Second):
		t.Fatal("no periodic read")
	}
	place("etcd.yaml", etcdYAML)
	if got := names(next("writing etcd.yaml into the new directory")); len(got) != 1 || got[0] != "kube-system/etcd-node-a" {
		t.Fatalf("pods %v", got)
	}
}
