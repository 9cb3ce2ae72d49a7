package podnet

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/plinth/plinth/kernel/linkns"
)

// Bridge is the Linux Network: pods on one bridge in the node's namespace.
type Bridge struct {
	cfg    Config
	host   linkns.Host
	alloc  *Allocator
	logger *slog.Logger

	// nodeMu guards nodeReady: the node-wide state is made on the first Setup (and
	// again after a failure), not at New, so constructing a Bridge touches nothing.
	nodeMu    sync.Mutex
	nodeReady bool

	pods podLocks
}

var _ Network = (*Bridge)(nil)

// New returns the bridge network for cfg, loading the allocator's state from
// StateDir. It touches no kernel state.
func New(cfg Config, logger *slog.Logger) (*Bridge, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("podnet: state directory: %w", err)
	}
	alloc, err := OpenAllocator(filepath.Join(cfg.StateDir, stateFile), cfg.PodCIDRs)
	if err != nil {
		return nil, fmt.Errorf("podnet: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Bridge{cfg: cfg, host: linkns.NewHost(cfg.NodeNetNS), alloc: alloc, logger: logger.With("component", "podnet")}, nil
}

// Allocator is the bridge's address allocator (to list the pods holding addresses).
func (b *Bridge) Allocator() *Allocator { return b.alloc }

// EnsureNode makes the node-wide state: forwarding, bridge netfilter where the kernel
// has it, the bridge with a gateway address in each pod CIDR, and the masquerade table.
func (b *Bridge) EnsureNode(ctx context.Context) error {
	b.nodeMu.Lock()
	defer b.nodeMu.Unlock()
	if b.nodeReady {
		return nil
	}
	if err := b.ensureNode(); err != nil {
		return fmt.Errorf("podnet: node network: %w", err)
	}
	b.nodeReady = true
	b.logger.Info("node pod network ready", "bridge", b.cfg.BridgeName, "pod_cidrs", fmt.Sprint(b.cfg.PodCIDRs))
	return nil
}

func (b *Bridge) ensureNode() error {
	var gateways []netip.Prefix
	v6 := false
	for _, p := range b.cfg.PodCIDRs {
		gateways = append(gateways, netip.PrefixFrom(Gateway(p), p.Bits()))
		v6 = v6 || p.Addr().Is6()
	}
	if err := b.host.EnsureBridge(b.cfg.BridgeName, gateways); err != nil {
		return err
	}
	sysctls := [][2]string{
		{"net.ipv4.ip_forward", "1"},
		// Pod-to-pod traffic leaves the bridge by the way it came in; a redirect would
		// only be noise (pods reach only the gateway on-link).
		{"net.ipv4.conf." + b.cfg.BridgeName + ".send_redirects", "0"},
	}
	if v6 {
		sysctls = append(sysctls, [2]string{"net.ipv6.conf.all.forwarding", "1"})
	}
	for _, s := range sysctls {
		if err := b.host.WriteSysctl(s[0], s[1]); err != nil {
			return err
		}
	}
	// Bridge netfilter is not needed (pods have single-address prefixes, so all their
	// traffic is routed), but where the kernel has it, kube-proxy's expectation holds.
	for _, name := range []string{"net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables"} {
		ok, err := b.host.SysctlExists(name)
		if err != nil {
			return err
		}
		if ok {
			if err := b.host.WriteSysctl(name, "1"); err != nil {
				return err
			}
		}
	}
	return ensureMasquerade(b.cfg.NodeNetNS, b.cfg.TableName, b.cfg.PodCIDRs, b.cfg.ClusterCIDRs)
}

// Setup implements Network.
func (b *Bridge) Setup(ctx context.Context, podUID, netnsName string) (Attachment, error) {
	if err := checkPodUID(podUID); err != nil {
		return Attachment{}, fmt.Errorf("podnet: %w", err)
	}
	if netnsName == "" {
		netnsName = podUID
	}
	if err := checkPodUID(netnsName); err != nil {
		return Attachment{}, fmt.Errorf("podnet: network namespace name: %w", err)
	}
	if err := b.EnsureNode(ctx); err != nil {
		return Attachment{}, err
	}
	defer b.pods.lock(podUID)()
	r, err := b.alloc.Allocate(podUID, netnsName)
	if err != nil {
		return Attachment{}, fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	path := netnsPath(b.cfg.NetNSDir, r.NetNS)
	if err := linkns.CreateNetNS(path); err != nil {
		return Attachment{}, fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	gateways := make([]netip.Addr, len(b.cfg.PodCIDRs))
	for i, p := range b.cfg.PodCIDRs {
		gateways[i] = Gateway(p)
	}
	err = b.host.EnsurePodInterface(linkns.PodInterface{HostName: hostInterfaceName(podUID), Bridge: b.cfg.BridgeName,
		NetNSPath: path, Addresses: r.IPs, Gateways: gateways})
	if err != nil {
		// The reservation and namespace stay: a retried Setup reuses them, Teardown
		// removes them.
		return Attachment{}, fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	b.logger.Debug("pod network set up", "pod_uid", podUID, "netns", path, "ips", fmt.Sprint(r.IPs))
	return Attachment{IPs: r.IPs, NetNSPath: path}, nil
}

// Teardown implements Network.
func (b *Bridge) Teardown(ctx context.Context, podUID string) error {
	if err := checkPodUID(podUID); err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	defer b.pods.lock(podUID)()
	name := podUID
	if r, ok := b.alloc.Lookup(podUID); ok {
		name = r.NetNS
	}
	if err := b.host.DeleteLink(hostInterfaceName(podUID)); err != nil {
		return fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	if err := linkns.DeleteNetNS(netnsPath(b.cfg.NetNSDir, name)); err != nil {
		return fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	if err := b.alloc.Release(podUID); err != nil {
		return fmt.Errorf("podnet: pod %s: %w", podUID, err)
	}
	return nil
}

// Cleanup implements Network.
func (b *Bridge) Cleanup(ctx context.Context) error {
	b.nodeMu.Lock()
	b.nodeReady = false
	b.nodeMu.Unlock()
	return Cleanup(ctx, CleanupConfig{BridgeName: b.cfg.BridgeName, TableName: b.cfg.TableName, NodeNetNS: b.cfg.NodeNetNS})
}

// CleanupConfig names the node-wide state Cleanup removes; empty fields are the
// defaults.
type CleanupConfig struct {
	BridgeName, TableName, NodeNetNS string
}

// Cleanup removes the bridge and the masquerade table (plinthd --cleanup), without
// needing the node's pod CIDRs. Pods' interfaces and namespaces are Teardown's.
func Cleanup(ctx context.Context, c CleanupConfig) error {
	if c.BridgeName == "" {
		c.BridgeName = DefaultBridgeName
	}
	if c.TableName == "" {
		c.TableName = DefaultTableName
	}
	if err := deleteMasquerade(c.NodeNetNS, c.TableName); err != nil {
		return fmt.Errorf("podnet cleanup: %w", err)
	}
	if err := linkns.NewHost(c.NodeNetNS).DeleteLink(c.BridgeName); err != nil {
		return fmt.Errorf("podnet cleanup: %w", err)
	}
	return nil
}
