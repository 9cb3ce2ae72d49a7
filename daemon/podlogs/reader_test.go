package podlogs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, time.November, 26, 10, 0, 0, 0, time.UTC)

// criLine formats one entry as the runtime writes it.
func criLine(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

func writeLog(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func copyLog(t *testing.T, path string, o Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := NewReader().Copy(context.Background(), &buf, path, o); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	return buf.String()
}

func sampleLog(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, path,
		criLine(1, "stdout", "F", "one"),
		criLine(2, "stderr", "F", "two"),
		criLine(3, "stdout", "P", "thr"),
		criLine(4, "stdout", "P", "e"),
		criLine(4, "stderr", "F", "four"), // interleaves with the partial stdout line
		criLine(5, "stdout", "F", "e!"),
		"garbage that is no CRI line\n",
		criLine(6, "stdout", "F", "five"),
	)
	return path
}

func TestCopyAll(t *testing.T) {
	got := copyLog(t, sampleLog(t), Options{})
	want := "one\ntwo\nfour\nthree!\nfive\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCopyTail(t *testing.T) {
	path := sampleLog(t)
	for n, want := range map[int64]string{
		0: "",
		1: "five\n",
		2: "three!\nfive\n",
		3: "four\nthree!\nfive\n",
		5: "one\ntwo\nfour\nthree!\nfive\n",
		9: "one\ntwo\nfour\nthree!\nfive\n",
	} {
		if got := copyLog(t, path, Options{TailLines: ptr(n)}); got != want {
			t.Errorf("tail %d: got %q, want %q", n, got, want)
		}
	}
}

func TestCopySinceAndTimestamps(t *testing.T) {
	path := sampleLog(t)
	got := copyLog(t, path, Options{Since: t0.Add(3 * time.Second), Timestamps: true})
	// A merged line carries the time of its first part.
	want := t0.Add(4*time.Second).Format(time.RFC3339Nano) + " four\n" +
		t0.Add(3*time.Second).Format(time.RFC3339Nano) + " three!\n" +
		t0.Add(6*time.Second).Format(time.RFC3339Nano) + " five\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCopyLimitBytes(t *testing.T) {
	got := copyLog(t, sampleLog(t), Options{LimitBytes: 6})
	if got != "one\ntw" {
		t.Errorf("got %q, want %q", got, "one\ntw")
	}
}

func TestCopyUnfinishedLineAtEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, path, criLine(1, "stdout", "F", "done"), criLine(2, "stdout", "P", "half"))
	if got := copyLog(t, path, Options{}); got != "done\nhalf\n" {
		t.Errorf("got %q", got)
	}
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	l := Locator{Root: root}
	writeLog(t, ContainerLogPath(root, "ns", "web", "uid-1", "app", 0), criLine(1, "stdout", "F", "first run"))
	writeLog(t, ContainerLogPath(root, "ns", "web", "uid-1", "app", 1), criLine(2, "stdout", "F", "second run"))
	writeLog(t, filepath.Join(PodDir(root, "ns", "web", "uid-1"), "app", "1.log.20261126-100000"), criLine(0, "stdout", "F", "rotated"))
	writeLog(t, ContainerLogPath(root, "ns", "web", "uid-1", "side", 0), criLine(1, "stdout", "F", "only"))

	cur, err := l.Locate("ns", "web", "", "app", false)
	if err != nil || filepath.Base(cur) != "1.log" {
		t.Fatalf("current: %q, %v", cur, err)
	}
	prev, err := l.Locate("ns", "web", "uid-1", "app", true)
	if err != nil || filepath.Base(prev) != "0.log" {
		t.Fatalf("previous: %q, %v", prev, err)
	}
	if got := copyLog(t, prev, Options{}); got != "first run\n" {
		t.Errorf("previous log: %q", got)
	}
	for _, c := range []struct {
		ns, pod, uid, container string
		previous                bool
		want                    string
	}{
		{"ns", "web", "", "side", true, "previous terminated container"},
		{"ns", "web", "", "nope", false, "has no logs"},
		{"ns", "gone", "", "app", false, "has no logs"},
		{"ns", "web", "uid-2", "app", false, "has no logs"},
	} {
		_, err := l.Locate(c.ns, c.pod, c.uid, c.container, c.previous)
		if err == nil || !strings.Contains(err.Error(), c.want) || !isNotFound(err) {
			t.Errorf("Locate(%q, %q, %q, %q, %v) = %v, want not found containing %q", c.ns, c.pod, c.uid, c.container, c.previous, err, c.want)
		}
	}
	for _, bad := range []string{"..", "a/b", "a_b", "*", ""} {
		if _, err := l.Locate("ns", bad, "", "app", false); err == nil || isNotFound(err) {
			t.Errorf("pod %q: got %v, want a name error", bad, err)
		}
	}
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrNotFound.Error())
}

// syncBuffer is written by the follower and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stepUntil advances the fake clock one poll at a time until out holds want.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("follow output %q, want %q", out.String(), want)
		}
		if clk.HasWaiters() {
			clk.Step(DefaultPollInterval)
		} else {
			runtime.Gosched()
		}
	}
}

// pollOnce lets the follower run exactly one poll.
func pollOnce(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	waitWaiter := func() {
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the follower never waited for its next poll")
			}
			runtime.Gosched()
		}
	}
	waitWaiter()
	clk.Step(DefaultPollInterval)
	waitWaiter()
}

func TestFollowAppendsAndRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeLog(t, path, criLine(1, "stdout", "F", "a"), criLine(2, "stdout", "F", "b"))
	clk := clocktesting.NewFakeClock(t0)
	r := &Reader{Clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- r.Copy(ctx, out, path, Options{TailLines: ptr[int64](1), Follow: true}) }()

	stepUntil(t, clk, out, "b\n")
	writeLog(t, path, criLine(3, "stdout", "P", "c1"))
	writeLog(t, path, criLine(3, "stdout", "F", "c2"))
	stepUntil(t, clk, out, "b\nc1c2\n")

	// Rotation as the runtime does it: the last lines land in the old file, which is
	// renamed away; a new file takes the name.
	writeLog(t, path, criLine(4, "stdout", "F", "d"))
	if err := os.Rename(path, path+".20261126-100004"); err != nil {
		t.Fatal(err)
	}
	writeLog(t, path, criLine(5, "stdout", "F", "e"))
	stepUntil(t, clk, out, "b\nc1c2\nd\ne\n")

	// Truncation in place (copytruncate) starts over at the beginning once a poll
	// sees the file shorter than what was read.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	pollOnce(t, clk)
	writeLog(t, path, criLine(6, "stdout", "F", "f"))
	stepUntil(t, clk, out, "b\nc1c2\nd\ne\nf\n")

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Copy: %v", err)
	}
}

func TestFollowEndsWhenStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, path, criLine(1, "stdout", "F", "a"))
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	stopped := false
	r := &Reader{Clock: clk, Stopped: func() bool { mu.Lock(); defer mu.Unlock(); return stopped }}
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- r.Copy(context.Background(), out, path, Options{Follow: true}) }()
	stepUntil(t, clk, out, "a\n")
	writeLog(t, path, criLine(2, "stdout", "P", "last words"))
	mu.Lock()
	stopped = true
	mu.Unlock()
	stepUntil(t, clk, out, "a\nlast words\n")
	if err := <-done; err != nil {
		t.Fatalf("Copy: %v", err)
	}
}
