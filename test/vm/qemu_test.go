package vm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeQemu puts an executable named qemu-system-x86_64 running script first in PATH.
func fakeQemu(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "qemu-system-x86_64"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

// A guest whose console goes silent is killed and reported hung, long before the run's
// own deadline; one that keeps talking and powers off is not.
func TestRunKillsASilentGuest(t *testing.T) {
	fakeQemu(t, "echo 'plinth-vm: running x.test'\nexec sleep 60\n")
	m := machine{label: "fake", console: filepath.Join(t.TempDir(), "console.log"), silence: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := m.run(ctx, io.Discard)
	if !errors.Is(err, errGuestHung) {
		t.Fatalf("run = %v, want errGuestHung", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the silent guest was killed after %s; the silence allowance is 300ms", took)
	}
	if data, _ := os.ReadFile(m.console); !strings.Contains(string(data), "running x.test") {
		t.Fatalf("console lost the guest's output: %q", data)
	}
}

func TestRunLetsATalkativeGuestFinish(t *testing.T) {
	fakeQemu(t, "for i in 1 2 3 4 5 6; do echo tick; sleep 0.1; done\n")
	m := machine{label: "fake", console: filepath.Join(t.TempDir(), "console.log"), silence: 400 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.run(ctx, io.Discard); err != nil {
		t.Fatalf("a guest printing every 100ms with a 400ms allowance: %v", err)
	}
}

// A package that hangs the guest is run again in a fresh boot, from that package on,
// and the hang is recorded as its first crash.
func TestBootAllRerunsTheHungPackage(t *testing.T) {
	results := t.TempDir()
	t.Setenv("FAKE_RESULTS", results)
	// First boot: a passes, b starts and the guest hangs. Second boot (plinth.from=1):
	// b passes and the guest says it is done.
	fakeQemu(t, `case "$*" in
*plinth.from=0*) echo 0 > "$FAKE_RESULTS/a.rc"; echo ok > "$FAKE_RESULTS/a.out"
  echo '=== RUN   TestB' > "$FAKE_RESULTS/b.out"; echo 'plinth-vm: running b'; exec sleep 60 ;;
*plinth.from=1*) echo 0 > "$FAKE_RESULTS/b.rc"; echo ok > "$FAKE_RESULTS/b.out"; touch "$FAKE_RESULTS/DONE" ;;
esac
`)
	m := machine{label: "fake", console: filepath.Join(t.TempDir(), "console.log"), silence: 300 * time.Millisecond}
	bins := []TestBinary{{Name: "a"}, {Name: "b"}}
	crashes, problem := bootAll(context.Background(), Options{VMTimeout: 30 * time.Second, Log: io.Discard}, m, bins, results)
	if problem != "" {
		t.Fatalf("problem %q, want none", problem)
	}
	if len(crashes["b"]) != 1 || !strings.Contains(crashes["b"][0], "during TestB") || !strings.Contains(crashes["b"][0], "hung") {
		t.Fatalf("crashes = %v; want b's hang during TestB once", crashes)
	}
	if len(crashes["a"]) != 0 {
		t.Fatalf("a was blamed: %v", crashes["a"])
	}
	if _, err := os.Stat(filepath.Join(results, "b.crashed")); err != nil {
		t.Fatalf("the hung run's output was not kept aside: %v", err)
	}
}
