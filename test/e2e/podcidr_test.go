package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node registered by plinthd gets its pod CIDRs from plinth-control's node IPAM
// (--cluster-cidr), and the node's own credentials cannot change them.
func TestNodeGetsPodCIDRsFromClusterCIDR(t *testing.T) {
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16,fd00:10:244::/56", "--node-cidr-mask-size", "25")
	n := newNode(t, c)
	n.start(t)
	var cidrs string
	eventually(t, 60*time.Second, "the node's pod CIDRs", func() (bool, string) {
		out, err := kubectl(t, c.kubeconfig, "get", "node", nodeName, "-o", "jsonpath={.spec.podCIDR} {.spec.podCIDRs}")
		cidrs = out
		return err == nil && strings.HasPrefix(out, "10.244.0.0/25 "), out
	})
	if want := `10.244.0.0/25 ["10.244.0.0/25","fd00:10:244::/64"]`; cidrs != want {
		t.Errorf("pod CIDRs %q, want %q", cidrs, want)
	}
	// Refused (by the registry, which keeps pod CIDRs once set, before NodeRestriction,
	// which refuses any pod CIDR a node writes for itself, gets to see it).
	out, err := kubectl(t, n.kubeconfig, "patch", "node", nodeName, "--type", "merge", "-p", `{"spec":{"podCIDR":"10.244.9.0/25","podCIDRs":["10.244.9.0/25"]}}`)
	if err == nil || !strings.Contains(err.Error(), "podCIDR") {
		t.Errorf("the node changing its own pod CIDR: %v: %s; want a refusal naming podCIDR", err, out)
	}
	if after, _ := kubectl(t, c.kubeconfig, "get", "node", nodeName, "-o", "jsonpath={.spec.podCIDR}"); after != "10.244.0.0/25" {
		t.Errorf("pod CIDR after the node's attempt: %q", after)
	}
}

func TestBadClusterCIDRStopsTheControlService(t *testing.T) {
	cmd := exec.Command(filepath.Join(binaries(t), "plinth-control"), "--data-dir", t.TempDir(),
		"--cluster-cidr", "10.244.0.0/16", "--node-cidr-mask-size", "8")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--node-cidr-mask-size: /8 is larger than the cluster CIDR 10.244.0.0/16") {
		t.Errorf("plinth-control with a mask shorter than the cluster CIDR: %v\n%s", err, out)
	}
}
