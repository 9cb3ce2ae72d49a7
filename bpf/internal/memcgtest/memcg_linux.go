package memcgtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	v1Memory   = cgroupRoot + "/memory"
	hybridV2   = cgroupRoot + "/unified"
)

// MemoryCgroup needs a memory controller to put limits on: the v1 memory hierarchy or
// a v2 tree offering "memory".
var MemoryCgroup = kerneltest.Feature{Name: "memory cgroup", Probe: func() error {
	if isCgroup2(cgroupRoot) {
		b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
		if err != nil {
			return err
		}
		if !strings.Contains(" "+string(b)+" ", " memory") {
			return fmt.Errorf("%s/cgroup.controllers lacks memory: %q", cgroupRoot, strings.TrimSpace(string(b)))
		}
		return nil
	}
	_, err := os.Stat(filepath.Join(v1Memory, "memory.limit_in_bytes"))
	return err
}}

// V2Tree needs a cgroup v2 hierarchy, alone or beside v1 ones (hybrid), since BPF
// keys its per-cgroup data by cgroup v2 id.
var V2Tree = kerneltest.Feature{Name: "cgroup v2 tree", Probe: func() error {
	if isCgroup2(cgroupRoot) || isCgroup2(hybridV2) {
		return nil
	}
	return fmt.Errorf("neither %s nor %s is a cgroup2 mount", cgroupRoot, hybridV2)
}}

// Cgroup is a memory-limited test cgroup.
type Cgroup struct {
	// MemoryPath carries the limit: a v1 memory cgroup, or the v2 cgroup.
	MemoryPath string
	// V2Path is the cgroup in the v2 tree, "" on a host without one.
	V2Path string
	// MemcgID and V2ID are the inode numbers of those directories, which BPF sees as
	// the cgroup ids. V2ID is 0 without a v2 tree.
	MemcgID, V2ID uint64
}

// New creates a cgroup limited to limit bytes of memory (and no swap).
func New(t testing.TB, limit int64) *Cgroup {
	t.Helper()
	name := "plinth-bpftest-" + randomSuffix(t)
	cg := &Cgroup{}
	if isCgroup2(cgroupRoot) {
		// The memory controller must be on for the root's children.
		writeFile(t, filepath.Join(cgroupRoot, "cgroup.subtree_control"), "+memory")
		cg.V2Path = makeDir(t, filepath.Join(cgroupRoot, name))
		cg.MemoryPath = cg.V2Path
		writeFile(t, filepath.Join(cg.V2Path, "memory.max"), strconv.FormatInt(limit, 10))
		if _, err := os.Stat(filepath.Join(cg.V2Path, "memory.swap.max")); err == nil {
			writeFile(t, filepath.Join(cg.V2Path, "memory.swap.max"), "0")
		}
	} else {
		cg.MemoryPath = makeDir(t, filepath.Join(v1Memory, name))
		writeFile(t, filepath.Join(cg.MemoryPath, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10))
		if isCgroup2(hybridV2) {
			cg.V2Path = makeDir(t, filepath.Join(hybridV2, name))
		}
	}
	cg.MemcgID = inode(t, cg.MemoryPath)
	if cg.V2Path != "" {
		cg.V2ID = inode(t, cg.V2Path)
	}
	return cg
}

// Add moves pid into the cgroup (each hierarchy of it).
func (cg *Cgroup) Add(t testing.TB, pid int) {
	t.Helper()
	for _, dir := range []string{cg.MemoryPath, cg.V2Path} {
		if dir != "" {
			writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
		}
	}
}

// Start starts name with args in the cgroup: the process joins it before it runs a
// single instruction of name, so it never allocates outside. Cleanup kills it.
func (cg *Cgroup) Start(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	// sh waits on its stdin until it has been moved, then execs the program.
	script := `read _ && exec "$0" "$@"`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, name}, args...)...)
	gate, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	cg.Add(t, cmd.Process.Pid)
	if _, err := io.WriteString(gate, "go\n"); err != nil {
		t.Fatalf("release %s: %v", name, err)
	}
	gate.Close()
	return cmd
}

// StartHog starts a shell that allocates memory without bound (doubling a string) in
// the cgroup, until the kernel kills it. It returns the hog; its pid is the pid the OOM
// killer will name, since the shell is single-threaded.
func (cg *Cgroup) StartHog(t testing.TB) *exec.Cmd {
	t.Helper()
	return cg.Start(t, "/bin/sh", "-c", `x=aaaaaaaa; while :; do x=$x$x; done`)
}

// Killed reports whether cmd ended by SIGKILL, waiting up to timeout for it to end.
func Killed(cmd *exec.Cmd, timeout time.Duration) (bool, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok {
				return ws.Signaled() && ws.Signal() == syscall.SIGKILL, nil
			}
		}
		return false, err
	case <-time.After(timeout):
		return false, fmt.Errorf("pid %d still running after %v", cmd.Process.Pid, timeout)
	}
}

func isCgroup2(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

func randomSuffix(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// makeDir creates a cgroup directory and registers its removal. A cgroup can be
// removed once its last task has exited, which takes a moment after SIGKILL.
func makeDir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

func writeFile(t testing.TB, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatalf("write %q to %s: %v", value, path, err)
	}
}

func inode(t testing.TB, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
