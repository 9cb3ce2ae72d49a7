package conntrack

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	vnl "github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
)

// testFlow is a flow from client to service, DNATed to endpoint.
type testFlow struct {
	proto           uint8
	client, service string
	endpoint        string
}

func (f testFlow) conntrack() *vnl.ConntrackFlow {
	c, s, e := netip.MustParseAddrPort(f.client), netip.MustParseAddrPort(f.service), netip.MustParseAddrPort(f.endpoint)
	family := uint8(unix.AF_INET)
	if c.Addr().Is6() {
		family = unix.AF_INET6
	}
	flow := &vnl.ConntrackFlow{
		FamilyType: family,
		Forward:    vnl.IPTuple{Protocol: f.proto, SrcIP: net.IP(c.Addr().AsSlice()), SrcPort: c.Port(), DstIP: net.IP(s.Addr().AsSlice()), DstPort: s.Port()},
		Reverse:    vnl.IPTuple{Protocol: f.proto, SrcIP: net.IP(e.Addr().AsSlice()), SrcPort: e.Port(), DstIP: net.IP(c.Addr().AsSlice()), DstPort: c.Port()},
		TimeOut:    120,
	}
	if f.proto == unix.IPPROTO_TCP {
		flow.ProtoInfo = &vnl.ProtoInfoTCP{State: 3} // ESTABLISHED
	}
	return flow
}

func (f testFlow) key() string {
	return fmt.Sprintf("%d %s>%s>%s", f.proto, f.client, f.service, f.endpoint)
}

// TestDeleteUDPInFreshNetns creates real conntrack entries in a fresh network
// namespace and checks that DeleteUDP removes exactly the selected UDP flows.
func TestDeleteUDPInFreshNetns(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.Conntrack)
	ns := kerneltest.NewNetNS(t)
	var (
		d   *Deleter
		h   *vnl.Handle
		err error
	)
	ns.Do(t, func() {
		if d, err = Open(); err != nil {
			return
		}
		h, err = vnl.NewHandle(unix.NETLINK_NETFILTER)
	})
	if err != nil {
		t.Fatalf("netlink in %s: %v", ns.Name, err)
	}
	defer d.Close()
	defer h.Close()

	stale := []testFlow{
		{unix.IPPROTO_UDP, "10.0.0.1:40000", "10.96.0.10:53", "10.244.0.7:5353"},        // removed endpoint
		{unix.IPPROTO_UDP, "10.0.0.3:40002", "192.0.2.1:30053", "10.244.0.7:5353"},      // its node port
		{unix.IPPROTO_UDP, "10.0.0.4:40003", "10.96.0.11:53", "10.244.0.9:53"},          // deleted service
		{unix.IPPROTO_UDP, "[fd00::1]:40004", "[fd00:96::10]:53", "[fd00:244::7]:5353"}, // IPv6 removed endpoint
	}
	live := []testFlow{
		{unix.IPPROTO_UDP, "10.0.0.2:40001", "10.96.0.10:53", "10.244.0.8:5353"},        // live endpoint
		{unix.IPPROTO_TCP, "10.0.0.1:40000", "10.96.0.10:53", "10.244.0.7:5353"},        // TCP to the removed endpoint
		{unix.IPPROTO_UDP, "10.0.0.5:40005", "10.96.0.12:53", "10.244.0.7:5353"},        // other service, same endpoint
		{unix.IPPROTO_UDP, "[fd00::2]:40006", "[fd00:96::10]:53", "[fd00:244::8]:5353"}, // IPv6 live endpoint
	}
	for _, f := range append(slices.Clone(stale), live...) {
		fam := vnl.InetFamily(f.conntrack().FamilyType)
		if err := h.ConntrackCreate(vnl.ConntrackTable, fam, f.conntrack()); err != nil {
			t.Fatalf("creating conntrack flow %s: %v", f.key(), err)
		}
	}
	if got := listFlows(t, h); len(got) != len(stale)+len(live) {
		t.Fatalf("after creating %d flows the table holds %d: %v", len(stale)+len(live), len(got), got)
	}

	ap := netip.MustParseAddrPort
	n, err := d.DeleteUDP(context.Background(), []Match{
		{Dst: ap("10.96.0.10:53"), DNATTo: ap("10.244.0.7:5353")},
		{DstPort: 30053, DNATTo: ap("10.244.0.7:5353")},
		{Dst: ap("10.96.0.11:53")},
		{Dst: ap("[fd00:96::10]:53"), DNATTo: ap("[fd00:244::7]:5353")},
	})
	if err != nil {
		t.Fatalf("DeleteUDP: %v", err)
	}
	if n != len(stale) {
		t.Errorf("DeleteUDP deleted %d flows, want %d", n, len(stale))
	}
	var want []string
	for _, f := range live {
		want = append(want, f.key())
	}
	slices.Sort(want)
	if got := listFlows(t, h); !slices.Equal(got, want) {
		t.Fatalf("flows left:\n%v\nwant:\n%v", got, want)
	}

	// Nothing left to select: a second call deletes nothing and fails on nothing.
	if n, err := d.DeleteUDP(context.Background(), []Match{{Dst: ap("10.96.0.11:53")}}); n != 0 || err != nil {
		t.Fatalf("second DeleteUDP = %d, %v", n, err)
	}
}

func listFlows(t *testing.T, h *vnl.Handle) []string {
	t.Helper()
	var out []string
	for _, fam := range []vnl.InetFamily{unix.AF_INET, unix.AF_INET6} {
		flows, err := h.ConntrackTableList(vnl.ConntrackTable, fam)
		if err != nil {
			t.Fatalf("listing conntrack: %v", err)
		}
		for _, f := range flows {
			ap := func(ip net.IP, port uint16) string {
				a, _ := netip.AddrFromSlice(ip)
				return netip.AddrPortFrom(a.Unmap(), port).String()
			}
			out = append(out, fmt.Sprintf("%d ", f.Forward.Protocol)+ap(f.Forward.SrcIP, f.Forward.SrcPort)+">"+ap(f.Forward.DstIP, f.Forward.DstPort)+">"+ap(f.Reverse.SrcIP, f.Reverse.SrcPort))
		}
	}
	slices.Sort(out)
	return out
}
