package netlink

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestChooseDefaultRoute(t *testing.T) {
	routes := []routeCandidate{
		{Dst: mustCIDR(t, "10.0.0.0/8"), Type: unix.RTN_UNICAST, LinkIndex: 2, Priority: 0},
		{Dst: mustCIDR(t, "0.0.0.0/0"), Type: unix.RTN_BLACKHOLE, Priority: 0},
		{Dst: mustCIDR(t, "0.0.0.0/0"), Type: unix.RTN_UNICAST, LinkIndex: 3, Gw: net.ParseIP("192.0.2.1"), Priority: 600},
		{Dst: nil, Type: unix.RTN_UNICAST, LinkIndex: 4, Gw: net.ParseIP("198.51.100.1"), Priority: 100},
		{Dst: mustCIDR(t, "0.0.0.0/0"), Type: unix.RTN_UNICAST, LinkIndex: 5, Priority: 200},
	}
	got, ok := chooseDefaultRoute(routes)
	if !ok {
		t.Fatal("no default route chosen")
	}
	if got.LinkIndex != 4 || got.Priority != 100 {
		t.Errorf("chose %+v, want the unicast default with the lowest metric (link 4, metric 100)", got)
	}

	if _, ok := chooseDefaultRoute(routes[:2]); ok {
		t.Error("chose a default route from a prefix route and a blackhole default")
	}
}

func TestFirstGlobalUnicast(t *testing.T) {
	addrs := []addrCandidate{
		{IP: net.ParseIP("fe80::1")},
		{IP: net.ParseIP("127.0.0.1")},
		{IP: net.ParseIP("10.1.0.9"), Flags: unix.IFA_F_TENTATIVE},
		{IP: net.ParseIP("2001:db8::5")},
		{IP: net.ParseIP("10.1.0.7").To4()},
		{IP: net.ParseIP("10.1.0.8")},
	}
	if got := firstGlobalUnicast(addrs, unix.AF_INET); !got.Equal(net.ParseIP("10.1.0.7")) {
		t.Errorf("IPv4 pick = %v, want 10.1.0.7 (first usable global unicast)", got)
	}
	if got := firstGlobalUnicast(addrs, unix.AF_INET6); !got.Equal(net.ParseIP("2001:db8::5")) {
		t.Errorf("IPv6 pick = %v, want 2001:db8::5", got)
	}
	if got := firstGlobalUnicast(addrs[:3], unix.AF_INET); got != nil {
		t.Errorf("pick from loopback, link-local and tentative = %v, want none", got)
	}
}
