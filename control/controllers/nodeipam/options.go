package nodeipam

import (
	"fmt"
	"net/netip"
	"strings"
)

// Options are the controller's settings, from plinth-control's flags.
type Options struct {
	// ClusterCIDRs are where node CIDRs come from: at most one IPv4 and one IPv6
	// prefix. Empty turns the controller off.
	ClusterCIDRs []netip.Prefix
	// NodeMaskSizeIPv4 and NodeMaskSizeIPv6 are the prefix lengths of the CIDR each
	// Node gets from the IPv4 and the IPv6 cluster CIDR.
	NodeMaskSizeIPv4 int
	NodeMaskSizeIPv6 int
}

// The defaults are kube-controller-manager's --node-cidr-mask-size-ipv4 and -ipv6.
const (
	DefaultNodeMaskSizeIPv4 = 24
	DefaultNodeMaskSizeIPv6 = 64
)

// maxNodeBits bounds the number of node CIDRs in one cluster CIDR at 2^16, as
// kube-controller-manager's cidrset does.
const maxNodeBits = 16

// DefaultOptions is off (no cluster CIDR) with the default mask sizes.
func DefaultOptions() Options {
	return Options{NodeMaskSizeIPv4: DefaultNodeMaskSizeIPv4, NodeMaskSizeIPv6: DefaultNodeMaskSizeIPv6}
}

// Enabled reports whether there is anything to allocate from.
func (o Options) Enabled() bool { return len(o.ClusterCIDRs) > 0 }

// ParseClusterCIDRs parses the --cluster-cidr flag: comma-separated CIDRs, at most one
// per IP family; empty means none. Errors name the flag and the value.
func ParseClusterCIDRs(value string) ([]netip.Prefix, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	seen := map[bool]netip.Prefix{}
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("--cluster-cidr: %q is not a CIDR such as 10.244.0.0/16 or fd00:10:244::/56", item)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("--cluster-cidr: %q has host bits set (did you mean %s?)", item, p.Masked())
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("--cluster-cidr: %q is an IPv4-mapped IPv6 CIDR; write the IPv4 CIDR", item)
		}
		if other, dup := seen[p.Addr().Is4()]; dup {
			return nil, fmt.Errorf("--cluster-cidr: %q: at most one CIDR per IP family, and %s is already %s", value, other, familyName(p))
		}
		seen[p.Addr().Is4()] = p
		out = append(out, p)
	}
	return out, nil
}

func familyName(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// maskSize is the node CIDR length for cluster CIDR p, with its flag name.
func (o Options) maskSize(p netip.Prefix) (int, string) {
	if p.Addr().Is4() {
		return o.NodeMaskSizeIPv4, "--node-cidr-mask-size"
	}
	return o.NodeMaskSizeIPv6, "--node-cidr-mask-size-ipv6"
}

// Validate reports every option out of range, naming the flag and the value.
func (o Options) Validate() error {
	seen := map[bool]bool{}
	for _, p := range o.ClusterCIDRs {
		if !p.IsValid() || p != p.Masked() {
			return fmt.Errorf("--cluster-cidr: %q is not a CIDR without host bits", p)
		}
		if seen[p.Addr().Is4()] {
			return fmt.Errorf("--cluster-cidr: more than one %s CIDR", familyName(p))
		}
		seen[p.Addr().Is4()] = true
		size, flagName := o.maskSize(p)
		switch {
		case size <= 0 || size > p.Addr().BitLen():
			return fmt.Errorf("%s: %d is not a %s prefix length (1-%d)", flagName, size, familyName(p), p.Addr().BitLen())
		case size < p.Bits():
			return fmt.Errorf("%s: /%d is larger than the cluster CIDR %s (--cluster-cidr); want a length of at least %d", flagName, size, p, p.Bits())
		case size-p.Bits() > maxNodeBits:
			return fmt.Errorf("%s: /%d would cut %s (--cluster-cidr) into 2^%d node CIDRs; at most 2^%d, so a length of at most %d",
				flagName, size, p, size-p.Bits(), maxNodeBits, p.Bits()+maxNodeBits)
		}
	}
	return nil
}
