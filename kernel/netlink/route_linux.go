package netlink

import (
	"errors"
	"fmt"
	"net"

	vnl "github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultRouteSource returns the source address the kernel would use for traffic on
// the default route of family (unix.AF_INET or unix.AF_INET6): the default route's
// preferred source (`ip route add default ... src X`) when set, else the first usable
// global unicast address of the route's output link. It reads the main routing table
// and link addresses only.
func DefaultRouteSource(family int) (net.IP, error) {
	if family != unix.AF_INET && family != unix.AF_INET6 {
		return nil, fmt.Errorf("address family %d: want unix.AF_INET (%d) or unix.AF_INET6 (%d)", family, unix.AF_INET, unix.AF_INET6)
	}
	routes, err := vnl.RouteListFiltered(family, &vnl.Route{Table: unix.RT_TABLE_MAIN}, vnl.RT_FILTER_TABLE)
	if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing %s routes in the main table: %w", familyName(family), err)
	}
	cands := make([]routeCandidate, 0, len(routes))
	for _, r := range routes {
		c := routeCandidate{Dst: r.Dst, Type: r.Type, Src: r.Src, Gw: r.Gw, LinkIndex: r.LinkIndex, Priority: r.Priority}
		if c.LinkIndex == 0 && len(r.MultiPath) > 0 {
			c.LinkIndex, c.Gw = r.MultiPath[0].LinkIndex, r.MultiPath[0].Gw
		}
		cands = append(cands, c)
	}
	def, ok := chooseDefaultRoute(cands)
	if !ok {
		return nil, fmt.Errorf("no %s default route in the main routing table (%d routes listed)", familyName(family), len(routes))
	}
	if def.Src != nil {
		return def.Src, nil
	}
	link, err := vnl.LinkByIndex(def.LinkIndex)
	if err != nil {
		return nil, fmt.Errorf("%s default route via %s: output link %d: %w", familyName(family), def.Gw, def.LinkIndex, err)
	}
	name := link.Attrs().Name
	addrs, err := vnl.AddrList(link, family)
	if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing %s addresses of %s: %w", familyName(family), name, err)
	}
	ac := make([]addrCandidate, 0, len(addrs))
	for _, a := range addrs {
		ac = append(ac, addrCandidate{IP: a.IP, Flags: a.Flags})
	}
	if ip := firstGlobalUnicast(ac, family); ip != nil {
		return ip, nil
	}
	return nil, fmt.Errorf("%s default route via %s dev %s has no preferred source, and %s has no usable global unicast %s address",
		familyName(family), def.Gw, name, name, familyName(family))
}

// LinkAddresses returns the usable global unicast addresses (IPv4 and IPv6) of every
// link that is up and not a loopback, in the kernel's order.
func LinkAddresses() ([]net.IP, error) {
	links, err := vnl.LinkList()
	if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var ips []net.IP
	for _, l := range links {
		attrs := l.Attrs()
		if attrs.Flags&net.FlagUp == 0 || attrs.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := vnl.AddrList(l, vnl.FAMILY_ALL)
		if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
			return nil, fmt.Errorf("listing addresses of %s: %w", attrs.Name, err)
		}
		for _, a := range addrs {
			if a.IP.IsGlobalUnicast() && a.Flags&unusableAddrFlags == 0 {
				ips = append(ips, a.IP)
			}
		}
	}
	return ips, nil
}
