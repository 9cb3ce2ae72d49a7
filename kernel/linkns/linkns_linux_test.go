package linkns

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth/plinth/internal/kerneltest"
)

func TestEnsureBridgeLeavesAForeignLinkAlone(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.Veth, kerneltest.Bridge)
	ns := kerneltest.NewNetNS(t)
	ns.Run(t, "ip", "link", "add", "taken0", "type", "veth", "peer", "name", "taken1")
	h := NewHost(ns.Path)
	err := h.EnsureBridge("taken0", []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24")})
	if err == nil || !strings.Contains(err.Error(), "is a veth, not a bridge") {
		t.Fatalf("EnsureBridge over a veth: %v", err)
	}
	if out := ns.Run(t, "ip", "-o", "addr", "show", "dev", "taken0"); strings.Contains(out, "10.9.0.1") {
		t.Errorf("the foreign link was given an address: %s", out)
	}
	// A bridge's addresses converge on what is asked: a stray one goes, a kept one stays.
	if err := h.EnsureBridge("br-t", []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24")}); err != nil {
		t.Fatal(err)
	}
	ns.Run(t, "ip", "addr", "add", "10.8.0.1/24", "dev", "br-t")
	if err := h.EnsureBridge("br-t", []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("fd00:9::1/64")}); err != nil {
		t.Fatal(err)
	}
	out := ns.Run(t, "ip", "-o", "addr", "show", "dev", "br-t", "scope", "global")
	if !strings.Contains(out, "10.9.0.1/24") || !strings.Contains(out, "fd00:9::1/64") || strings.Contains(out, "10.8.0.1") {
		t.Errorf("bridge addresses:\n%s\nwant 10.9.0.1/24 and fd00:9::1/64 only", out)
	}
	if strings.Contains(out, "tentative") {
		t.Errorf("bridge address waits for duplicate address detection:\n%s", out)
	}
}

func TestNetNSLifecycle(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS)
	path := filepath.Join(t.TempDir(), "ns", "pod")
	t.Cleanup(func() { _ = DeleteNetNS(path) })
	if err := CreateNetNS(path); err != nil {
		t.Fatal(err)
	}
	if ok, err := IsNetNS(path); !ok || err != nil {
		t.Fatalf("after create: IsNetNS = %v, %v", ok, err)
	}
	// Creating again keeps the same namespace (same inode).
	before, _ := os.Stat(path)
	if err := CreateNetNS(path); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("a second CreateNetNS replaced the namespace")
	}
	if err := DeleteNetNS(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after delete: %v", err)
	}
	if err := DeleteNetNS(path); err != nil {
		t.Errorf("deleting a missing namespace: %v", err)
	}
}
