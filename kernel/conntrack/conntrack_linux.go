package conntrack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	vnl "github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Deleter deletes conntrack flows in the network namespace it was opened in.
type Deleter struct {
	h *vnl.Handle
}

// Open opens a netfilter netlink socket in the calling thread's network namespace.
func Open() (*Deleter, error) {
	h, err := vnl.NewHandle(unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("conntrack: opening a netfilter netlink socket: %w", err)
	}
	return &Deleter{h: h}, nil
}

// Close releases the socket.
func (d *Deleter) Close() { d.h.Close() }

// DeleteUDP deletes every UDP flow one of matches selects and returns how many went.
// It dumps the conntrack table of each family the matches need once. ctx is checked
// between families only: one netlink dump is not interruptible.
func (d *Deleter) DeleteUDP(ctx context.Context, matches []Match) (int, error) {
	if len(matches) == 0 {
		return 0, nil
	}
	set, err := newMatchSet(matches)
	if err != nil {
		return 0, err
	}
	filter := netlinkFilter{set}
	total := 0
	var errs []error
	for _, fam := range []struct {
		need   bool
		family vnl.InetFamily
		name   string
	}{{set.v4, unix.AF_INET, "IPv4"}, {set.v6, unix.AF_INET6, "IPv6"}} {
		if !fam.need {
			continue
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := d.h.ConntrackDeleteFilters(vnl.ConntrackTable, fam.family, filter)
		total += int(n)
		if err != nil && !errors.Is(err, vnl.ErrDumpInterrupted) {
			errs = append(errs, fmt.Errorf("conntrack: deleting %s UDP flows: %w", fam.name, err))
		}
	}
	return total, errors.Join(errs...)
}

// netlinkFilter adapts a matchSet to vishvananda/netlink's filter interface.
type netlinkFilter struct{ set *matchSet }

func (f netlinkFilter) MatchConntrackFlow(flow *vnl.ConntrackFlow) bool {
	return f.set.selects(Flow{
		Protocol: flow.Forward.Protocol,
		OrigDst:  addrPort(flow.Forward.DstIP, flow.Forward.DstPort),
		ReplySrc: addrPort(flow.Reverse.SrcIP, flow.Reverse.SrcPort),
	})
}

func addrPort(ip net.IP, port uint16) netip.AddrPort {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(a.Unmap(), port)
}
