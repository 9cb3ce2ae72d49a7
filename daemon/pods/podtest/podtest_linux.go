//go:build linux

package podtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth/plinth/internal/kerneltest"
	"golang.org/x/sys/unix"
)

// BusyboxPath is where Debian's busybox-static puts the binary.
const BusyboxPath = "/bin/busybox"

// Busybox needs a static busybox (a dynamic one would need its libraries in the root).
var Busybox = kerneltest.Feature{Name: "busybox-static", Probe: func() error {
	b, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return fmt.Errorf("%w (install busybox-static)", err)
	}
	if strings.Contains(string(b[:min(len(b), 4096)]), "ld-linux") {
		return fmt.Errorf("%s is dynamically linked; install busybox-static", BusyboxPath)
	}
	return nil
}}

// busyboxApplets are linked in the root filesystem's /bin.
var busyboxApplets = []string{"sh", "echo", "cat", "sleep", "true", "false", "ls", "mkdir", "id",
	"dd", "head", "hostname", "ps", "kill", "wc", "env", "pwd", "touch", "rm", "yes", "grep", "nc", "wget", "stat", "readlink", "test", "[", "httpd"}

// BusyboxRootfs builds a minimal root filesystem at dir: /bin/busybox with its applets,
// /etc/passwd and /etc/group with root and a user "app" (1000:1000), and the empty
// directories runc mounts onto.
func BusyboxRootfs(t testing.TB, dir string) {
	t.Helper()
	kerneltest.Require(t, Busybox)
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "tmp", "root", "home/app"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range busyboxApplets {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n",
		"etc/group":  "root:x:0:\napp:x:1000:\nextra:x:2000:app\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var seq atomic.Int64

// CgroupParent returns a unique top-level cgroup path (/plinth-test-runtime-<pid>-<n>)
// for a test's containers, and removes it, with every cgroup under it, in every
// hierarchy at cleanup (after the test's own cleanups registered later, which stop
// the containers).
func CgroupParent(t testing.TB) string {
	t.Helper()
	return CgroupParentUnder(t, "")
}

// CgroupParentUnder is CgroupParent below the cgroup base ("" is the root), such as a
// cgrouptest cgroup with a memory limit made earlier in the test: its removal runs
// first, so base is empty again when its own cleanup comes.
func CgroupParentUnder(t testing.TB, base string) string {
	t.Helper()
	name := fmt.Sprintf("%s/plinth-test-runtime-%d-%d", base, os.Getpid(), seq.Add(1))
	t.Cleanup(func() { removeCgroupEverywhere(t, name) })
	return name
}

func removeCgroupEverywhere(t testing.TB, name string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, root := range roots {
		top := filepath.Join(root, name)
		if _, err := os.Stat(filepath.Join(top, "cgroup.procs")); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first; a cgroup still emptying after a kill is retried briefly.
		for i := len(dirs) - 1; i >= 0; i-- {
			deadline := time.Now().Add(5 * time.Second)
			for {
				err := unix.Rmdir(dirs[i])
				if err == nil || errors.Is(err, unix.ENOENT) {
					break
				}
				if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
					t.Errorf("podtest cleanup: rmdir %s: %v", dirs[i], err)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}
