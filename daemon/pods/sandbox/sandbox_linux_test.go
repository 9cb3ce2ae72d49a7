//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
)

func TestCreatePinsNamespacesAndRemove(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	dir := filepath.Join(t.TempDir(), "pod")
	t.Cleanup(func() { _ = Remove(dir) })
	sb, err := Create(Options{Dir: dir, Hostname: "web-0", Hosts: []byte("hosts\n"), ResolvConf: []byte("nameserver 10.0.0.10\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := utsHostname(t, sb.UTSNSPath); got != "web-0" {
		t.Errorf("hostname in the pinned UTS namespace = %q, want web-0", got)
	}
	host, _ := os.Hostname()
	if host == "web-0" {
		t.Error("the node's hostname changed")
	}
	var own, pinned unix.Stat_t
	e1, e2 := unix.Stat("/proc/self/ns/ipc", &own), unix.Stat(sb.IPCNSPath, &pinned)
	if e1 != nil || e2 != nil || own.Ino == pinned.Ino {
		t.Errorf("pinned IPC namespace %s is the node's (inode %d)", sb.IPCNSPath, pinned.Ino)
	}
	if !isMount(sb.ShmPath) {
		t.Errorf("%s is not a tmpfs mount", sb.ShmPath)
	}
	if b, _ := os.ReadFile(sb.ResolvConfPath); !bytes.Equal(b, []byte("nameserver 10.0.0.10\n")) {
		t.Errorf("resolv.conf = %q", b)
	}
	// A second Create (plinthd restarted) finds the same namespaces.
	again, err := Create(Options{Dir: dir, Hostname: "web-0", Hosts: []byte("hosts\n"), ResolvConf: []byte("x\n")})
	if err != nil {
		t.Fatal(err)
	}
	var pinnedAgain unix.Stat_t
	if unix.Stat(again.IPCNSPath, &pinnedAgain) != nil || pinnedAgain.Ino != pinned.Ino {
		t.Errorf("second Create replaced the IPC namespace (inode %d, was %d)", pinnedAgain.Ino, pinned.Ino)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s remains after Remove: %v", dir, err)
	}
}

// utsHostname reads the host name inside the UTS namespace at path, on a thread that
// is discarded afterwards.
func utsHostname(t *testing.T, path string) string {
	var name string
	err := onThrowawayThread(func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			return err
		}
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return err
		}
		name = string(bytes.TrimRight(u.Nodename[:], "\x00"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}
