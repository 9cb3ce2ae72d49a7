package ipalloc

import (
	"context"
	"fmt"
	"math/big"
	"net/netip"
)

// ServiceIPPrefix is where cluster IP claims live in storage.
const ServiceIPPrefix = "/ipallocations/services/"

// maxHostBits bounds the service range at a /12 for IPv4 and a /108 for IPv6, as
// kube-apiserver does.
const maxHostBits = 20

// ServiceIPs allocates cluster IPs from one CIDR. The network address is never handed
// out, nor, for IPv4, the broadcast address.
type ServiceIPs struct {
	cidr   netip.Prefix
	first  netip.Addr // offset 0
	claims *claims
}

// CheckServiceIPRange reports why cidr cannot be a service IP range: not a CIDR, more
// than 20 host bits, or fewer than 2.
func CheckServiceIPRange(cidr netip.Prefix) error {
	if !cidr.IsValid() {
		return fmt.Errorf("service IP range %q is not a CIDR", cidr)
	}
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if hostBits > maxHostBits {
		return fmt.Errorf("service IP range %s is too large: at most %d host bits (a /%d)", cidr, maxHostBits, cidr.Addr().BitLen()-maxHostBits)
	}
	if hostBits < 2 {
		return fmt.Errorf("service IP range %s is too small: at least 2 host bits (a /%d)", cidr, cidr.Addr().BitLen()-2)
	}
	return nil
}

// NewServiceIPs returns the allocator for cidr, for example 10.96.0.0/12.
func NewServiceIPs(store Store, cidr netip.Prefix, o Options) (*ServiceIPs, error) {
	if err := CheckServiceIPRange(cidr); err != nil {
		return nil, err
	}
	cidr = cidr.Masked()
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	size := uint64(1) << hostBits
	usable := size - 1 // no network address
	if cidr.Addr().Is4() {
		usable-- // no broadcast address
	}
	// The band is sized from the whole CIDR, as Kubernetes does: min(max(16, size/16), 256).
	b := bands{size: usable, lower: min(lowerBandSize(size, 16, 16, 256), usable)}
	a := &ServiceIPs{cidr: cidr, first: cidr.Addr().Next()}
	a.claims = newClaims(store, ServiceIPPrefix, b, o, a.name, a.parse)
	return a, nil
}

// Range is the CIDR the allocator serves.
func (a *ServiceIPs) Range() netip.Prefix { return a.cidr }

// LowerBand is the number of addresses reserved for static allocation, from the first
// usable address up.
func (a *ServiceIPs) LowerBand() uint64 { return a.claims.bands.lower }

// Size is the number of usable addresses.
func (a *ServiceIPs) Size() uint64 { return a.claims.bands.size }

func (a *ServiceIPs) addr(off uint64) netip.Addr {
	n := new(big.Int).SetBytes(a.first.AsSlice())
	n.Add(n, new(big.Int).SetUint64(off))
	buf := make([]byte, a.first.BitLen()/8)
	n.FillBytes(buf)
	ip, _ := netip.AddrFromSlice(buf)
	return ip
}

// offset is ip's place in the range; ok is false outside the usable addresses.
func (a *ServiceIPs) offset(ip netip.Addr) (uint64, bool) {
	ip = ip.Unmap()
	if !a.cidr.Contains(ip) || ip.Is4() != a.first.Is4() {
		return 0, false
	}
	n := new(big.Int).SetBytes(ip.AsSlice())
	n.Sub(n, new(big.Int).SetBytes(a.first.AsSlice()))
	if n.Sign() < 0 || !n.IsUint64() || n.Uint64() >= a.claims.bands.size {
		return 0, false
	}
	return n.Uint64(), true
}

func (a *ServiceIPs) name(off uint64) string { return a.addr(off).String() }

func (a *ServiceIPs) parse(name string) (uint64, bool) {
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return 0, false
	}
	return a.offset(ip)
}

// Allocate claims a free address for owner, from the upper band if any is free there.
func (a *ServiceIPs) Allocate(ctx context.Context, owner Owner) (netip.Addr, error) {
	off, err := a.claims.allocate(ctx, owner, nil)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.addr(off), nil
}

// Claim takes a specific address for owner. It fails with ErrNotInRange or
// ErrAllocated (held by another owner).
func (a *ServiceIPs) Claim(ctx context.Context, ip netip.Addr, owner Owner) error {
	off, ok := a.offset(ip)
	if !ok {
		return ErrNotInRange
	}
	return a.claims.claim(ctx, off, owner)
}

// Release frees ip if owner holds it.
func (a *ServiceIPs) Release(ctx context.Context, ip netip.Addr, owner Owner) error {
	off, ok := a.offset(ip)
	if !ok {
		return nil
	}
	return a.claims.release(ctx, off, owner)
}

// Held lists the claimed addresses and their owners.
func (a *ServiceIPs) Held(ctx context.Context) (map[netip.Addr]Owner, error) {
	m, err := a.claims.held(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[netip.Addr]Owner, len(m))
	for off, o := range m {
		out[a.addr(off)] = o
	}
	return out, nil
}
