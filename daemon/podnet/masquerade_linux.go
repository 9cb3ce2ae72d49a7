package podnet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The masquerade table (Config.TableName, family inet) is this package's contract
// with the rest of the node's nftables state:
//
//	table inet plinth-podnet {
//		chain postrouting {
//			type nat hook postrouting priority srcnat; policy accept;
//			ip saddr <pod CIDR> ip daddr <cluster CIDR> return   # one per cluster CIDR of the family
//			ip saddr <pod CIDR> masquerade
//		}
//	}
//
// Pods keep their address towards the cluster's pods (and so towards Service
// backends after the proxy's DNAT); everything else leaving the node carries the
// node's address. The proxy's own masquerading (its mark) runs in its own table and
// does not depend on this one. The table is replaced whole in one transaction.

// nftConn opens a netlink connection to nf_tables in nsPath ("" is the caller's).
func nftConn(nsPath string) (*nftables.Conn, func(), error) {
	if nsPath == "" {
		c, err := nftables.New()
		return c, func() {}, err
	}
	f, err := os.Open(nsPath)
	if err != nil {
		return nil, nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return c, func() { c.CloseLasting(); f.Close() }, nil
}

func ensureMasquerade(nsPath, table string, pods, cluster []netip.Prefix) error {
	c, done, err := nftConn(nsPath)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer done()
	t := &nftables.Table{Name: table, Family: nftables.TableFamilyINet}
	// Add, delete, add: the table is replaced whole whether or not it existed.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	policy := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &policy})
	for _, p := range pods {
		for _, dst := range cluster {
			if dst.Addr().Is4() != p.Addr().Is4() {
				continue
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(append(matchFamily(p), matchPrefix(p, false)...),
				append(matchPrefix(dst, true), &expr.Verdict{Kind: expr.VerdictReturn})...)})
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(append(matchFamily(p), matchPrefix(p, false)...), &expr.Masq{})})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: table inet %s: %w", table, err)
	}
	return nil
}

func matchFamily(p netip.Prefix) []expr.Any {
	proto := byte(unix.NFPROTO_IPV6)
	if p.Addr().Is4() {
		proto = unix.NFPROTO_IPV4
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

// matchPrefix compares the source (or destination) address with p.
func matchPrefix(p netip.Prefix, destination bool) []expr.Any {
	offset, length := uint32(12), uint32(4) // IPv4 saddr; daddr at 16
	if p.Addr().Is6() {
		offset, length = 8, 16 // IPv6 saddr; daddr at 24
	}
	if destination {
		offset += length
	}
	mask := make([]byte, length)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: length},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: length, Mask: mask, Xor: make([]byte, length)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

// deleteMasquerade removes the table; a missing one is not an error.
func deleteMasquerade(nsPath, table string) error {
	c, done, err := nftConn(nsPath)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	defer done()
	c.DelTable(&nftables.Table{Name: table, Family: nftables.TableFamilyINet})
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("nftables: delete table inet %s: %w", table, err)
	}
	return nil
}
