//go:build linux

package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"

	"github.com/plinth/plinth/kernel/features"
)

var probeSeq atomic.Int64

var (
	// NFTables needs nf_tables over netlink, with NAT chains (probed by creating a
	// table in a fresh network namespace).
	NFTables = Feature{Name: "nftables", Probe: hostResult((*features.System).NFTablesNetlink)}
	// Veth needs veth links (created in a throwaway namespace).
	Veth = Feature{Name: "veth", Probe: func() error { return probeLink("veth", "type", "veth", "peer", "name", "p1") }}
	// Bridge needs bridge links.
	Bridge = Feature{Name: "bridge", Probe: func() error { return probeLink("bridge", "type", "bridge") }}
	// Conntrack needs connection tracking (nf_conntrack loaded), whose flows tests
	// create and delete over netlink.
	Conntrack = Feature{Name: "conntrack", Probe: hostResult((*features.System).Conntrack)}
	// NFTBinary needs the nft command (Debian's nftables package), used by tests only to
	// check that it can print what plinthd programs.
	NFTBinary = Feature{Name: "nft binary", Probe: func() error {
		_, err := exec.LookPath("nft")
		return err
	}}
)

// probeLink creates a link of the given kind in a throwaway network namespace.
func probeLink(kind string, args ...string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("creating a %s link needs root", kind)
	}
	ns := fmt.Sprintf("plinth-probe-%d-%d", os.Getpid(), probeSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("ip", "netns", "delete", ns).Run()
	full := append([]string{"-n", ns, "link", "add", "p0"}, args...)
	if out, err := exec.Command("ip", full...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link add type %s: %v: %s", kind, err, strings.TrimSpace(string(out)))
	}
	return nil
}
