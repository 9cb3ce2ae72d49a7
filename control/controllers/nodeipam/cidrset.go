package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// errFull means every node CIDR of a cluster CIDR is occupied.
var errFull = errors.New("no node CIDR left")

// holder is who occupies a node CIDR: a Node by name and UID.
type holder struct {
	name string
	uid  string
}

// cidrSet is the occupancy of one cluster CIDR cut into node CIDRs of maskSize bits.
// It is owned by the controller's single worker.
type cidrSet struct {
	cluster  netip.Prefix
	maskSize int
	count    uint64   // 1 << (maskSize - cluster bits)
	used     []holder // by index; name == "" is free
	occupied uint64
	next     uint64 // where the next search starts, so freed CIDRs are reused last
}

func newCIDRSet(cluster netip.Prefix, maskSize int) *cidrSet {
	count := uint64(1) << (maskSize - cluster.Bits())
	return &cidrSet{cluster: cluster, maskSize: maskSize, count: count, used: make([]holder, count)}
}

// index is p's place in the set; ok is false when p is not one of its node CIDRs.
func (s *cidrSet) index(p netip.Prefix) (uint64, bool) {
	if p.Bits() != s.maskSize || p.Addr().BitLen() != s.cluster.Addr().BitLen() || !s.cluster.Contains(p.Addr()) || p != p.Masked() {
		return 0, false
	}
	off := new(big.Int).Sub(new(big.Int).SetBytes(p.Addr().AsSlice()), new(big.Int).SetBytes(s.cluster.Addr().AsSlice()))
	off.Rsh(off, uint(p.Addr().BitLen()-s.maskSize))
	return off.Uint64(), true
}

// prefix is the node CIDR at index i.
func (s *cidrSet) prefix(i uint64) netip.Prefix {
	n := new(big.Int).SetUint64(i)
	n.Lsh(n, uint(s.cluster.Addr().BitLen()-s.maskSize))
	n.Add(n, new(big.Int).SetBytes(s.cluster.Addr().AsSlice()))
	buf := make([]byte, s.cluster.Addr().BitLen()/8)
	n.FillBytes(buf)
	a, _ := netip.AddrFromSlice(buf)
	return netip.PrefixFrom(a, s.maskSize)
}

// occupy marks p as held by h. It fails when p is not a node CIDR of this set or
// another Node holds it; occupying what h already holds succeeds.
func (s *cidrSet) occupy(p netip.Prefix, h holder) error {
	i, ok := s.index(p)
	if !ok {
		return fmt.Errorf("%s is not a /%d inside %s", p, s.maskSize, s.cluster)
	}
	switch cur := s.used[i]; {
	case cur == h:
		return nil
	case cur.name != "":
		return fmt.Errorf("%s is already held by Node %s", p, cur.name)
	}
	s.used[i] = h
	s.occupied++
	return nil
}

// allocate occupies the first free node CIDR from the search start for h.
func (s *cidrSet) allocate(h holder) (netip.Prefix, error) {
	for k := uint64(0); k < s.count; k++ {
		i := (s.next + k) % s.count
		if s.used[i].name == "" {
			s.used[i] = h
			s.occupied++
			s.next = (i + 1) % s.count
			return s.prefix(i), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%s: all %d /%d CIDRs are in use: %w", s.cluster, s.count, s.maskSize, errFull)
}

// release frees p if h holds it; anything else is left as it is.
func (s *cidrSet) release(p netip.Prefix, h holder) bool {
	i, ok := s.index(p)
	if !ok || s.used[i] != h {
		return false
	}
	s.used[i] = holder{}
	s.occupied--
	return true
}
