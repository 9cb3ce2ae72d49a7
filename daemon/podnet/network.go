package podnet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Network gives pods their network. Every method is idempotent and keyed by the pod's
// UID; hostNetwork pods need none of it (they use the node's namespace).
type Network interface {
	// Setup gives the pod a network namespace named netnsName ("" means the pod UID)
	// with eth0 and an address from each pod CIDR, and returns them. Calling it again
	// returns the same.
	Setup(ctx context.Context, podUID, netnsName string) (Attachment, error)
	// Teardown removes the pod's interface and namespace and frees its addresses; a
	// pod without any is not an error.
	Teardown(ctx context.Context, podUID string) error
	// Cleanup removes the node-wide state: the bridge and the masquerade table.
	Cleanup(ctx context.Context) error
}

// Attachment is a pod's network as a container runtime needs it.
type Attachment struct {
	// IPs are the pod's addresses, one per pod CIDR in the Node's order (status.podIPs).
	IPs []netip.Addr
	// NetNSPath is the namespace to join (the OCI spec's network namespace path).
	NetNSPath string
}

// Defaults of Config.
const (
	DefaultBridgeName = "plinth0"
	DefaultNetNSDir   = "/run/plinth/netns"
	DefaultStateDir   = "/var/lib/plinth/podnet"
	DefaultTableName  = "plinth-podnet"
	// stateFile is the allocator's file in StateDir.
	stateFile = "ipam.json"
	// hostIfPrefix starts every pod's host-side interface name.
	hostIfPrefix = "plv"
)

// Config sets up a Bridge network.
type Config struct {
	// PodCIDRs are the node's (its Node's spec.podCIDRs): one, or one per family.
	PodCIDRs []netip.Prefix
	// ClusterCIDRs are the cluster's pod network; traffic from pods to them is not
	// masqueraded. Empty means PodCIDRs (a single node).
	ClusterCIDRs []netip.Prefix
	// BridgeName, NetNSDir, StateDir and TableName default to the constants above.
	BridgeName string
	NetNSDir   string
	StateDir   string
	TableName  string
	// NodeNetNS is the path of the namespace that acts as the node; empty is the
	// caller's own (tests pass a fresh namespace).
	NodeNetNS string
}

func (c Config) withDefaults() Config {
	if c.BridgeName == "" {
		c.BridgeName = DefaultBridgeName
	}
	if c.NetNSDir == "" {
		c.NetNSDir = DefaultNetNSDir
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.TableName == "" {
		c.TableName = DefaultTableName
	}
	if len(c.ClusterCIDRs) == 0 {
		c.ClusterCIDRs = c.PodCIDRs
	}
	return c
}

func (c Config) validate() error {
	if len(c.BridgeName) > 15 {
		return fmt.Errorf("podnet: bridge name %q is longer than 15 bytes", c.BridgeName)
	}
	for _, p := range c.ClusterCIDRs {
		if !p.IsValid() || p != p.Masked() {
			return fmt.Errorf("podnet: cluster CIDR %q is not a CIDR without host bits", p)
		}
	}
	for _, p := range c.PodCIDRs {
		if err := CheckPodCIDR(p); err != nil {
			return fmt.Errorf("podnet: %w", err)
		}
	}
	return nil
}

// checkPodUID refuses a UID that could not name a file or that could escape the netns
// directory; Kubernetes UIDs are UUIDs.
func checkPodUID(uid string) error {
	if uid == "" || len(uid) > 128 || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("pod UID %q: want a non-empty name without '/' (a UUID)", uid)
	}
	return nil
}

// hostInterfaceName is the pod's host-side veth: a fixed prefix and a hash of the UID,
// so it fits in 15 bytes and stays the same across restarts.
func hostInterfaceName(podUID string) string {
	sum := sha256.Sum256([]byte(podUID))
	return hostIfPrefix + hex.EncodeToString(sum[:])[:12]
}

func netnsPath(dir, name string) string { return filepath.Join(dir, name) }
