//go:build linux

package nftrules

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/proxy"
	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/conntrack"
	"github.com/plinth/plinth/kernel/nft"
)

// udpFlow is one client UDP socket with a fixed source port, connected to a service
// address: every datagram it sends belongs to the same conntrack flow until that flow
// is deleted.
type udpFlow struct {
	c *net.UDPConn
}

func (n *testNet) openUDPFlow(t *testing.T, from, to string) *udpFlow {
	t.Helper()
	var c *net.UDPConn
	var err error
	n.client.Do(t, func() {
		c, err = net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(from)), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(to)))
	})
	if err != nil {
		t.Fatalf("udp socket %s -> %s: %v", from, to, err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpFlow{c: c}
}

// ask sends one datagram and returns the name of the backend that answered.
func (f *udpFlow) ask(t *testing.T) string {
	t.Helper()
	_ = f.c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := f.c.Write([]byte("?")); err != nil {
		t.Fatalf("send: %v", err)
	}
	buf := make([]byte, 64)
	k, err := f.c.Read(buf)
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	return string(buf[:k])
}

// TestRemovedUDPEndpointFlowsDeleted checks the issue's "removing a UDP endpoint deletes
// its conntrack entries so the next datagram goes to a live one", through the path the
// proxy takes after a sync (proxy.DeleteStaleUDPFlows over kernel/conntrack). It first
// shows why the deletion is needed: after the rules dropped the endpoint, datagrams of
// the existing flow still reach it, because conntrack keeps the flow's DNAT.
func TestRemovedUDPEndpointFlowsDeleted(t *testing.T) {
	kerneltest.Require(t, kerneltest.Conntrack)
	n := newTestNet(t)
	serveUDP(t, n.local, 5353, "local")
	serveUDP(t, n.remote, 5353, "remote")
	ctx := context.Background()
	s := New(nft.NewNetlink(n.node.Path), clocktesting.NewFakeClock(time.Now()))
	var ct *conntrack.Deleter
	var err error
	n.node.Do(t, func() { ct, err = conntrack.Open() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ct.Close)

	backends := map[string]desired.Endpoint{
		"local":  ep("10.244.1.5", 5353, "node-b", false),
		"remote": ep("10.244.2.7", 5353, "node-a", false),
	}
	vip := netip.MustParseAddrPort("10.96.0.53:53")
	dns := desired.ServicePort{Protocol: desired.UDP, ClusterIP: vip.Addr(), Port: vip.Port(),
		ClusterEndpoints: []desired.Endpoint{backends["local"], backends["remote"]}}
	services := map[string]desired.ServicePort{"dns": dns}
	if err := s.Sync(ctx, trafficSnapshot(services), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}

	flow := n.openUDPFlow(t, "192.0.2.50:40053", vip.String())
	first := flow.ask(t)
	removed, ok := backends[first]
	if !ok {
		t.Fatalf("the service answered %q, not a backend's name", first)
	}
	live := "remote"
	if first == "remote" {
		live = "local"
	}
	for i := 0; i < 5; i++ {
		if got := flow.ask(t); got != first {
			t.Fatalf("datagram %d of one flow reached %q, the first reached %q", i+2, got, first)
		}
	}

	// Remove the endpoint that answered, as the proxy would on an EndpointSlice update.
	dns.ClusterEndpoints = []desired.Endpoint{backends[live]}
	services["dns"] = dns
	changes := desired.Changes{
		Changed:           map[desired.ServicePortName]bool{pn("dns", "http", desired.UDP): true},
		StaleUDPEndpoints: []desired.StaleUDPEndpoint{{Service: vip, Endpoint: removed.AddrPort()}},
	}
	if err := s.Sync(ctx, trafficSnapshot(services), changes); err != nil {
		t.Fatal(err)
	}

	t.Run("without deleting the flow, datagrams still reach the removed endpoint", func(t *testing.T) {
		if got := flow.ask(t); got != first {
			t.Fatalf("the stale flow reached %q; conntrack should have kept it on the removed %q", got, first)
		}
	})
	t.Run("after deleting the stale flows, the next datagram reaches the live endpoint", func(t *testing.T) {
		matches, deleted, err := proxy.DeleteStaleUDPFlows(ctx, ct, changes)
		if err != nil {
			t.Fatal(err)
		}
		if matches != 1 || deleted != 1 {
			t.Errorf("%d matches deleted %d flows, want 1 and 1 (the client's flow to %s)", matches, deleted, first)
		}
		for i := 0; i < 5; i++ {
			if got := flow.ask(t); got != live {
				t.Fatalf("datagram %d after the deletion reached %q, want the live %q", i+1, got, live)
			}
		}
	})
}
