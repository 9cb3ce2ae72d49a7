//go:build linux

package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

var netnsSeq atomic.Int64

// NetNSHandle is a named network namespace created for one test.
type NetNSHandle struct {
	Name string // name under /run/netns, usable with `ip netns exec`
	Path string // /run/netns/<Name>
}

// NewNetNS creates a fresh named network namespace with its loopback up, and removes it
// in t.Cleanup, even when the test fails. It needs Root and NetNS.
func NewNetNS(t testing.TB) NetNSHandle {
	t.Helper()
	Require(t, Root, NetNS)
	name := fmt.Sprintf("plinth-test-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", name, err, strings.TrimSpace(string(out)))
		}
	})
	h := NetNSHandle{Name: name, Path: "/run/netns/" + name}
	h.Run(t, "ip", "link", "set", "lo", "up")
	return h
}

// Run runs a command inside the namespace and fails the test if it fails.
func (h NetNSHandle) Run(t testing.TB, args ...string) string {
	t.Helper()
	full := append([]string{"netns", "exec", h.Name}, args...)
	out, err := exec.Command("ip", full...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out)
}

// Do runs fn on an OS thread switched into the namespace, then switches back. fn must
// not start goroutines that expect to stay in the namespace.
func (h NetNSHandle) Do(t testing.TB, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatalf("open current netns: %v", err)
	}
	defer orig.Close()
	target, err := os.Open(h.Path)
	if err != nil {
		t.Fatalf("open %s: %v", h.Path, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatalf("setns %s: %v", h.Path, err)
	}
	defer func() {
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread is in the wrong namespace; keep it locked so it dies with the goroutine.
			panic(fmt.Sprintf("kerneltest: cannot return to original netns: %v", err))
		}
	}()
	fn()
}
