package linkns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// EnsurePodInterface makes the veth pair of p exist and be configured: the host end a
// port of the bridge in hairpin mode and up; in the pod's namespace eth0 with p's addresses, lo and
// eth0 up, an on-link route to each gateway and a default route through it. A pair
// left half-made (only one end, or an eth0 that is not the host end's peer) is
// replaced.
func (h Host) EnsurePodInterface(p PodInterface) error {
	if len(p.HostName) == 0 || len(p.HostName) > 15 {
		return fmt.Errorf("host interface name %q: want 1 to 15 bytes", p.HostName)
	}
	if len(p.Addresses) != len(p.Gateways) {
		return fmt.Errorf("pod interface %s: %d addresses but %d gateways", p.HostName, len(p.Addresses), len(p.Gateways))
	}
	host, err := h.handle()
	if err != nil {
		return err
	}
	defer host.Close()
	podNS, err := netns.GetFromPath(p.NetNSPath)
	if err != nil {
		return fmt.Errorf("open pod network namespace %s: %w", p.NetNSPath, err)
	}
	defer podNS.Close()
	pod, err := netlink.NewHandleAt(podNS)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", p.NetNSPath, err)
	}
	defer pod.Close()

	bridge, err := host.LinkByName(p.Bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", p.Bridge, err)
	}
	hostEnd, err := ensureVeth(host, pod, podNS, p, bridge.Attrs().MTU)
	if err != nil {
		return err
	}
	if err := host.LinkSetMaster(hostEnd, bridge); err != nil {
		return fmt.Errorf("attach %s to %s: %w", p.HostName, p.Bridge, err)
	}
	// Hairpin mode lets the bridge send a frame back out of the port it came in by.
	// With bridge netfilter on, a pod's connection to a Service that is DNATed to the
	// pod itself is bridged, not routed, back to that same port; without hairpin the
	// bridge drops it (kubelet's hairpin-veth mode does the same).
	if err := host.LinkSetHairpin(hostEnd, true); err != nil {
		return fmt.Errorf("%s hairpin mode: %w", p.HostName, err)
	}
	if err := host.LinkSetUp(hostEnd); err != nil {
		return fmt.Errorf("%s up: %w", p.HostName, err)
	}
	return configurePod(pod, p)
}

// ensureVeth returns the host end of a pair whose peer is eth0 in the pod namespace,
// creating the pair (or re-creating a broken one).
func ensureVeth(host, pod *netlink.Handle, podNS netns.NsHandle, p PodInterface, mtu int) (netlink.Link, error) {
	hostEnd, hostErr := host.LinkByName(p.HostName)
	eth0, podErr := pod.LinkByName(PodInterfaceName)
	if hostErr == nil && podErr == nil && hostEnd.Type() == "veth" && eth0.Type() == "veth" {
		if peer, err := netlink.VethPeerIndex(hostEnd.(*netlink.Veth)); err == nil && peer == eth0.Attrs().Index &&
			eth0.Attrs().ParentIndex == hostEnd.Attrs().Index {
			return hostEnd, nil
		}
	}
	var nf netlink.LinkNotFoundError
	for _, e := range []error{hostErr, podErr} {
		if e != nil && !errors.As(e, &nf) {
			return nil, fmt.Errorf("pod interface %s: %w", p.HostName, e)
		}
	}
	if hostErr == nil {
		if err := host.LinkDel(hostEnd); err != nil && !errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("remove stale %s: %w", p.HostName, err)
		}
	}
	if podErr == nil {
		if err := pod.LinkDel(eth0); err != nil && !errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("remove stale %s in %s: %w", PodInterfaceName, p.NetNSPath, err)
		}
	}
	veth := &netlink.Veth{
		LinkAttrs: netlink.LinkAttrs{Name: p.HostName, MTU: mtu},
		PeerName:  PodInterfaceName, PeerNamespace: netlink.NsFd(podNS), PeerMTU: uint32(mtu),
	}
	if err := host.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s with %s in %s: %w", p.HostName, PodInterfaceName, p.NetNSPath, err)
	}
	l, err := host.LinkByName(p.HostName)
	if err != nil {
		return nil, fmt.Errorf("veth %s: %w", p.HostName, err)
	}
	return l, nil
}

func configurePod(pod *netlink.Handle, p PodInterface) error {
	lo, err := pod.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lo in %s: %w", p.NetNSPath, err)
	}
	if err := pod.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lo up in %s: %w", p.NetNSPath, err)
	}
	eth0, err := pod.LinkByName(PodInterfaceName)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", PodInterfaceName, p.NetNSPath, err)
	}
	var want []netip.Prefix
	for _, a := range p.Addresses {
		want = append(want, netip.PrefixFrom(a, a.BitLen()))
	}
	if err := ensureAddrs(pod, eth0, want); err != nil {
		return fmt.Errorf("%s in %s: %w", PodInterfaceName, p.NetNSPath, err)
	}
	if err := pod.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("%s up in %s: %w", PodInterfaceName, p.NetNSPath, err)
	}
	for i, gw := range p.Gateways {
		idx := eth0.Attrs().Index
		onLink := &netlink.Route{LinkIndex: idx, Scope: netlink.SCOPE_LINK, Dst: ipNet(netip.PrefixFrom(gw, gw.BitLen())),
			Src: p.Addresses[i].AsSlice(), Family: family(gw)}
		if err := pod.RouteReplace(onLink); err != nil {
			return fmt.Errorf("route to gateway %s in %s: %w", gw, p.NetNSPath, err)
		}
		anyDst := &net.IPNet{IP: make(net.IP, gw.BitLen()/8), Mask: net.CIDRMask(0, gw.BitLen())}
		def := &netlink.Route{LinkIndex: idx, Dst: anyDst, Gw: gw.AsSlice(), Src: p.Addresses[i].AsSlice(), Family: family(gw)}
		if err := pod.RouteReplace(def); err != nil {
			return fmt.Errorf("default route via %s in %s: %w", gw, p.NetNSPath, err)
		}
	}
	return nil
}
