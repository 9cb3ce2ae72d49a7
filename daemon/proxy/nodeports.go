package proxy

import (
	"fmt"
	"net/netip"
	"strings"
)

// NodePortAddressesPrimary is the --nodeport-addresses value that makes NodePorts
// listen on the node's primary addresses (its InternalIPs) only; it is the default.
const NodePortAddressesPrimary = "primary"

// ParseNodePortAddresses reads --nodeport-addresses: empty or ["primary"] for the
// node's primary addresses (nil result), else CIDRs such as 192.0.2.0/24 or ::/0,
// each naming the local addresses NodePorts listen on. "primary" cannot be mixed with
// CIDRs, and a CIDR inside the loopback range is refused: NodePorts never listen on
// 127.0.0.1 or ::1 (route_localnet is not used). Errors name the entry and its value.
func ParseNodePortAddresses(values []string) ([]netip.Prefix, error) {
	if len(values) == 0 {
		return nil, nil
	}
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for i, v := range values {
		s := strings.TrimSpace(v)
		if s == NodePortAddressesPrimary {
			if len(values) != 1 {
				return nil, fmt.Errorf("[%d]: %q cannot be combined with CIDRs; give either %q alone or a list of CIDRs", i, v, NodePortAddressesPrimary)
			}
			return nil, nil
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %q is neither %q nor a CIDR such as 192.0.2.0/24 or 2001:db8::/64", i, v, NodePortAddressesPrimary)
		}
		if p.Addr().Zone() != "" {
			return nil, fmt.Errorf("[%d]: %q: a CIDR has no IPv6 zone", i, v)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("[%d]: %q: write IPv4 CIDRs in IPv4 form", i, v)
		}
		p = p.Masked()
		if p.Addr().IsLoopback() {
			return nil, fmt.Errorf("[%d]: %q is a loopback range; NodePorts never listen on loopback addresses", i, v)
		}
		if seen[p] {
			return nil, fmt.Errorf("[%d]: %q is given twice", i, v)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// ParseCIDRs reads a list of CIDRs (clusterCIDRs, serviceCIDRs); errors name the entry.
func ParseCIDRs(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, v := range values {
		p, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			return nil, fmt.Errorf("[%d]: %q is not a CIDR such as 10.244.0.0/16 or fd00:10:244::/56", i, v)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
