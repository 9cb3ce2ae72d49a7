package netlink

import (
	"net"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
)

// vethNS is a fresh namespace with v0 (10.99.0.2/24) and its peer v1 up, and no
// default route yet.
func vethNS(t *testing.T) kerneltest.NetNSHandle {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS)
	ns := kerneltest.NewNetNS(t)
	ns.Run(t, "ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1")
	ns.Run(t, "ip", "addr", "add", "10.99.0.2/24", "dev", "v0")
	ns.Run(t, "ip", "link", "set", "v0", "up")
	ns.Run(t, "ip", "link", "set", "v1", "up")
	return ns
}

func TestDefaultRouteSourceFromLinkAddress(t *testing.T) {
	ns := vethNS(t)
	ns.Run(t, "ip", "route", "add", "default", "via", "10.99.0.1", "dev", "v0")
	var got net.IP
	var err error
	ns.Do(t, func() { got, err = DefaultRouteSource(unix.AF_INET) })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(net.ParseIP("10.99.0.2")) {
		t.Errorf("DefaultRouteSource = %v, want 10.99.0.2 (v0's address)", got)
	}
}

func TestDefaultRouteSourcePrefersRouteSrc(t *testing.T) {
	ns := vethNS(t)
	// A second address that is not the link's first: only the route's src can pick it.
	ns.Run(t, "ip", "addr", "add", "10.99.0.3/24", "dev", "v0")
	ns.Run(t, "ip", "route", "add", "default", "via", "10.99.0.1", "dev", "v0", "src", "10.99.0.3")
	var got net.IP
	var err error
	ns.Do(t, func() { got, err = DefaultRouteSource(unix.AF_INET) })
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(net.ParseIP("10.99.0.3")) {
		t.Errorf("DefaultRouteSource = %v, want 10.99.0.3 (the route's src)", got)
	}
}

func TestDefaultRouteSourceWithoutDefaultRoute(t *testing.T) {
	ns := vethNS(t)
	var err error
	ns.Do(t, func() { _, err = DefaultRouteSource(unix.AF_INET) })
	if err == nil || !strings.Contains(err.Error(), "no IPv4 default route") {
		t.Fatalf("error = %v, want one saying there is no IPv4 default route", err)
	}
	ns.Do(t, func() { _, err = DefaultRouteSource(unix.AF_INET6) })
	if err == nil || !strings.Contains(err.Error(), "no IPv6 default route") {
		t.Fatalf("IPv6 error = %v, want one saying there is no IPv6 default route", err)
	}
}

func TestDefaultRouteSourceLinkWithoutUsableAddress(t *testing.T) {
	ns := vethNS(t)
	// v1 has no address; an on-link default through it has nothing to offer as source.
	ns.Run(t, "ip", "route", "add", "default", "dev", "v1")
	var err error
	ns.Do(t, func() { _, err = DefaultRouteSource(unix.AF_INET) })
	if err == nil || !strings.Contains(err.Error(), "v1 has no usable global unicast IPv4 address") {
		t.Fatalf("error = %v, want one naming v1 and the missing address", err)
	}
}

func TestDefaultRouteSourceRejectsFamily(t *testing.T) {
	if _, err := DefaultRouteSource(unix.AF_UNIX); err == nil || !strings.Contains(err.Error(), "address family 1") {
		t.Errorf("error = %v, want one naming family 1", err)
	}
}

func TestLinkAddresses(t *testing.T) {
	ns := vethNS(t)
	ns.Run(t, "ip", "link", "add", "v2", "type", "veth", "peer", "name", "v3")
	ns.Run(t, "ip", "addr", "add", "10.98.0.1/24", "dev", "v2") // v2 stays down
	ns.Run(t, "ip", "addr", "add", "2001:db8::2/64", "dev", "v0", "nodad")
	var got []net.IP
	var err error
	ns.Do(t, func() { got, err = LinkAddresses() })
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, ip := range got {
		s = append(s, ip.String())
	}
	slices.Sort(s)
	if want := []string{"10.99.0.2", "2001:db8::2"}; !slices.Equal(s, want) {
		t.Errorf("LinkAddresses = %v, want %v (no loopback, link-local or down links)", s, want)
	}
}
