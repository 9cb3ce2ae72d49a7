// Route and address selection, kept apart from the netlink calls so it is testable
// without a kernel. Linux-only because the constants are Linux uapi values.

package netlink

import (
	"net"

	"golang.org/x/sys/unix"
)

// familyName names an address family for error messages.
func familyName(family int) string {
	switch family {
	case unix.AF_INET:
		return "IPv4"
	case unix.AF_INET6:
		return "IPv6"
	}
	return "unknown family"
}

// defaultRoute is the part of a kernel route DefaultRouteSource looks at.
type defaultRoute struct {
	Src       net.IP
	Gw        net.IP
	LinkIndex int
	Priority  int
}

// routeCandidate is one route from the main table, reduced to what choosing a default
// route needs, so the choice is testable without a kernel.
type routeCandidate struct {
	Dst       *net.IPNet // nil means default, as some kernels and libraries report it
	Type      int
	Src       net.IP
	Gw        net.IP
	LinkIndex int // output link; for a multipath route, the first hop's link
	Priority  int
}

// chooseDefaultRoute picks the default route the kernel would prefer: a unicast route
// with a zero-length prefix and the lowest metric. Blackhole, unreachable and
// prohibit defaults have no source to offer and are ignored.
func chooseDefaultRoute(routes []routeCandidate) (defaultRoute, bool) {
	var best defaultRoute
	found := false
	for _, r := range routes {
		if r.Type != unix.RTN_UNICAST {
			continue
		}
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		if r.LinkIndex == 0 && r.Src == nil {
			continue
		}
		if !found || r.Priority < best.Priority {
			best = defaultRoute{Src: r.Src, Gw: r.Gw, LinkIndex: r.LinkIndex, Priority: r.Priority}
			found = true
		}
	}
	return best, found
}

// addrCandidate is one address on a link, with its IFA_F_* flags.
type addrCandidate struct {
	IP    net.IP
	Flags int
}

// unusableAddrFlags mark addresses the kernel will not pick as a source: still being
// checked for duplicates, found duplicated, or deprecated.
const unusableAddrFlags = unix.IFA_F_TENTATIVE | unix.IFA_F_DADFAILED | unix.IFA_F_DEPRECATED

// firstGlobalUnicast returns the first address of the family that is global unicast
// (private ranges included, as they are what most nodes use) and usable as a source.
func firstGlobalUnicast(addrs []addrCandidate, family int) net.IP {
	for _, a := range addrs {
		if !matchesFamily(a.IP, family) || !a.IP.IsGlobalUnicast() || a.Flags&unusableAddrFlags != 0 {
			continue
		}
		return a.IP
	}
	return nil
}

func matchesFamily(ip net.IP, family int) bool {
	is4 := ip.To4() != nil
	switch family {
	case unix.AF_INET:
		return is4
	case unix.AF_INET6:
		return !is4 && len(ip) == net.IPv6len
	}
	return false
}
