package nodelock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// holderEnv, when set in the environment, makes the test binary act as a lock holder
// for the cross-process test: it acquires the named lock, says "locked <pid>" on
// stdout and waits until it is killed or its stdin closes.
const holderEnv = "PLINTH_NODELOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

func holdLock(path string) int {
	l, err := Acquire(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	fmt.Printf("locked %d\n", os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Release(); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	return 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAcquireReleaseReacquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "plinth", "plinthd.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if got, want := readFile(t, path), fmt.Sprintf("%d\n", os.Getpid()); got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
	if l.Path() != path {
		t.Errorf("Path() = %q, want %q", l.Path(), path)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := readFile(t, path); got != "" {
		t.Errorf("after Release the lock file holds %q, want it empty", got)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	l2, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	defer l2.Release()
	if got, want := readFile(t, path), fmt.Sprintf("%d\n", os.Getpid()); got != want {
		t.Errorf("lock file holds %q after reacquiring, want %q", got, want)
	}
}

func TestSecondAcquireFailsNamingHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plinthd.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer l.Release()

	// flock locks belong to the open file description, so a second open in this
	// process conflicts just as another process would.
	_, err = Acquire(path)
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: err = %v, want ErrHeld", err)
	}
	want := fmt.Sprintf("lock file %s is held by another plinthd (pid %d); stop it first", path, os.Getpid())
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Path != path {
		t.Errorf("error %#v is not a HeldError for pid %d at %s", err, os.Getpid(), path)
	}
	// The failed attempt must not have disturbed the holder's pid.
	if got := readFile(t, path); got != fmt.Sprintf("%d\n", os.Getpid()) {
		t.Errorf("after a failed Acquire the lock file holds %q", got)
	}
}

func TestHeldWithUnreadablePID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plinthd.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer l.Release()
	if err := os.WriteFile(path, []byte("not a pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "(unknown pid)") {
		t.Errorf("Acquire with garbage in the file: err = %v, want ErrHeld naming an unknown pid", err)
	}
}

func TestAcquireFailsWhenDirectoryCannotBeMade(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(filepath.Join(blocker, "plinthd.lock"))
	if err == nil || errors.Is(err, ErrHeld) {
		t.Errorf("Acquire under a regular file: err = %v, want a non-ErrHeld error", err)
	}
}

func TestAcquireAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plinthd.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		stdin.Close()
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading from the holder: %v", err)
	}
	childPID, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "locked "))
	if err != nil || childPID != cmd.Process.Pid {
		t.Fatalf("holder said %q, want \"locked %d\"", line, cmd.Process.Pid)
	}

	_, err = Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while a child holds the lock: err = %v, want a HeldError", err)
	}
	if held.PID != childPID || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", childPID)) {
		t.Errorf("error = %q, want it to name the child's pid %d", err, childPID)
	}

	// SIGKILL: the holder gets no chance to release; the kernel drops the lock.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	exited = true

	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	defer l.Release()
	if got, want := readFile(t, path), fmt.Sprintf("%d\n", os.Getpid()); got != want {
		t.Errorf("lock file holds %q, want our pid %q over the dead holder's", got, want)
	}
}

func TestCheckNoticesRemovedOrReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plinthd.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Check(); err != nil {
		t.Fatalf("fresh lock: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("after removal: %v, want an error saying the file was removed", err)
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("after replacement: %v, want an error saying the file was replaced", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil {
		t.Fatal("released lock passes Check")
	}
}
