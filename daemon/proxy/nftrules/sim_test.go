package nftrules

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/nft"
	"github.com/plinth/plinth/kernel/nft/nftsim"
)

func simOver(t *testing.T, f nft.Family) (*nftsim.Sim, *time.Time) {
	t.Helper()
	s, rec, _ := newTestSyncer()
	if err := s.Sync(context.Background(), snapshotOf(shapes()), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}
	sim := nftsim.New(rec.Tables(), f)
	sim.Local = []netip.Addr{nodeIP, nodeIP6, a("127.0.0.1"), a("172.31.0.1")}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	sim.Now = func() time.Time { return now }
	return sim, &now
}

type want struct {
	outcome    nftsim.Outcome
	tcpReset   bool
	dnat       string // "" for none
	masquerade bool
}

func check(t *testing.T, name string, got nftsim.Result, w want) {
	t.Helper()
	dnat := ""
	if got.DNAT {
		dnat = netip.AddrPortFrom(got.Dst, got.DPort).String()
	}
	if got.Outcome != w.outcome || got.TCPReset != w.tcpReset || dnat != w.dnat || got.Masquerade != w.masquerade {
		t.Errorf("%s: got %s, want %+v (path %s)", name, got, w, nftsim.TraceText(got))
	}
}

// steer makes a numgen cascade choose endpoint *k: the k-th numgen match succeeds.
func steer(k *int) func(call, n int) int {
	return func(call, n int) int {
		if call == *k {
			return 0
		}
		return 1 % n
	}
}

func tcp(src, dst netip.Addr, port uint16) nftsim.Packet {
	return nftsim.Packet{Src: src, Dst: dst, Proto: nft.ProtoTCP, DPort: port}
}

func TestSimulatedPackets(t *testing.T) {
	sim, _ := simOver(t, nft.IPv4)
	pick := 0
	sim.Pick = steer(&pick)
	cases := []struct {
		name   string
		pick   int
		p      nftsim.Packet
		origin nftsim.Origin
		want   want
	}{
		{"pod to ClusterIP, first endpoint", 0, tcp(localPod, a("10.96.0.10"), 80), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080"}},
		{"pod to ClusterIP, second endpoint", 1, tcp(localPod, a("10.96.0.10"), 80), nftsim.FromNetwork, want{dnat: "10.244.3.9:8080"}},
		{"off-cluster host to ClusterIP is masqueraded", 0, tcp(otherHost, a("10.96.0.10"), 80), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080", masquerade: true}},
		{"node itself to ClusterIP is masqueraded", 0, tcp(nodeIP, a("10.96.0.10"), 80), nftsim.FromLocal, want{dnat: "10.244.2.7:8080", masquerade: true}},
		{"hairpin: pod reaching itself is masqueraded", 0, tcp(localPod, a("10.96.0.30"), 80), nftsim.FromNetwork, want{dnat: "10.244.1.5:8080", masquerade: true}},
		{"UDP", 0, nftsim.Packet{Src: localPod, Dst: a("10.96.0.53"), Proto: nft.ProtoUDP, DPort: 53}, nftsim.FromNetwork, want{dnat: "10.244.2.7:53"}},
		{"SCTP", 0, nftsim.Packet{Src: localPod, Dst: a("10.96.0.40"), Proto: nft.ProtoSCTP, DPort: 9000}, nftsim.FromNetwork, want{dnat: "10.244.3.9:9000"}},
		{"wrong protocol to a TCP service port", 0, nftsim.Packet{Src: localPod, Dst: a("10.96.0.10"), Proto: nft.ProtoUDP, DPort: 80}, nftsim.FromNetwork, want{outcome: nftsim.Rejected}},
		{"no endpoints: TCP reset", 0, tcp(localPod, a("10.96.0.20"), 80), nftsim.FromNetwork, want{outcome: nftsim.Rejected, tcpReset: true}},
		{"no endpoints from the node: TCP reset", 0, tcp(nodeIP, a("10.96.0.20"), 80), nftsim.FromLocal, want{outcome: nftsim.Rejected, tcpReset: true}},
		{"no endpoints on the node port", 0, tcp(otherHost, nodeIP, 30020), nftsim.FromNetwork, want{outcome: nftsim.Rejected, tcpReset: true}},
		{"allocated ClusterIP, undefined port", 0, tcp(localPod, a("10.96.0.10"), 81), nftsim.FromNetwork, want{outcome: nftsim.Rejected, tcpReset: true}},
		{"unallocated ClusterIP is dropped", 0, tcp(localPod, a("10.96.5.5"), 80), nftsim.FromNetwork, want{outcome: nftsim.Dropped}},
		{"unallocated ClusterIP from the node is dropped", 0, tcp(nodeIP, a("10.96.5.5"), 80), nftsim.FromLocal, want{outcome: nftsim.Dropped}},
		{"NodePort on the primary address", 1, tcp(otherHost, nodeIP, 30080), nftsim.FromNetwork, want{dnat: "10.244.3.9:8080", masquerade: true}},
		{"NodePort on another local address: not a service", 0, tcp(otherHost, a("172.31.0.1"), 30080), nftsim.FromNetwork, want{}},
		{"NodePort on 127.0.0.1: never", 0, tcp(a("127.0.0.1"), a("127.0.0.1"), 30080), nftsim.FromLocal, want{}},
		{"Local NodePort from outside keeps the client address", 1, tcp(otherHost, nodeIP, 30081), nftsim.FromNetwork, want{dnat: "10.244.1.5:8080"}},
		{"Local NodePort from a pod short-circuits to all endpoints", 1, tcp(localPod, nodeIP, 30081), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080"}},
		{"Local NodePort from the node is masqueraded", 1, tcp(nodeIP, nodeIP, 30081), nftsim.FromLocal, want{dnat: "10.244.2.7:8080", masquerade: true}},
		{"Local NodePort without local endpoints drops", 0, tcp(otherHost, nodeIP, 30082), nftsim.FromNetwork, want{outcome: nftsim.Dropped}},
		{"Local NodePort service still serves its ClusterIP", 0, tcp(localPod, a("10.96.0.33"), 80), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080"}},
		{"internal Local without local endpoints drops", 0, tcp(localPod, a("10.96.0.34"), 80), nftsim.FromNetwork, want{outcome: nftsim.Dropped}},
		{"load balancer from an allowed range", 0, tcp(a("192.0.2.5"), a("203.0.113.9"), 443), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080", masquerade: true}},
		{"load balancer from elsewhere is dropped", 0, tcp(a("8.8.8.8"), a("203.0.113.9"), 443), nftsim.FromNetwork, want{outcome: nftsim.Dropped}},
		{"external IP ignores the load balancer's ranges", 0, tcp(a("8.8.8.8"), a("198.51.100.7"), 443), nftsim.FromNetwork, want{dnat: "10.244.2.7:8080", masquerade: true}},
		{"unrelated traffic is left alone", 0, tcp(otherHost, a("192.0.2.99"), 22), nftsim.FromNetwork, want{}},
	}
	for _, c := range cases {
		pick = c.pick
		check(t, c.name, sim.Send(c.p, c.origin), c.want)
	}
}

func TestSimulatedAffinitySticksForItsTimeout(t *testing.T) {
	sim, now := simOver(t, nft.IPv4)
	pick := 1
	sim.Pick = steer(&pick)
	client := a("10.244.7.7")
	check(t, "first connection", sim.Send(tcp(client, a("10.96.0.30"), 80), nftsim.FromNetwork), want{dnat: "10.244.2.7:8080"})
	pick = 0
	*now = now.Add(3*time.Hour - time.Second)
	check(t, "within the timeout", sim.Send(tcp(client, a("10.96.0.30"), 80), nftsim.FromNetwork), want{dnat: "10.244.2.7:8080"})
	check(t, "another client is free", sim.Send(tcp(a("10.244.8.8"), a("10.96.0.30"), 80), nftsim.FromNetwork), want{dnat: "10.244.1.5:8080"})
	*now = now.Add(3*time.Hour + time.Second)
	check(t, "after the timeout", sim.Send(tcp(client, a("10.96.0.30"), 80), nftsim.FromNetwork), want{dnat: "10.244.1.5:8080"})
}

func TestSimulatedIPv6(t *testing.T) {
	sim, _ := simOver(t, nft.IPv6)
	check(t, "ClusterIP", sim.Send(tcp(a("fd00:244::1:5"), a("fd00:96::10"), 80), nftsim.FromNetwork), want{dnat: "[fd00:244:2::7]:8080"})
	check(t, "NodePort", sim.Send(tcp(a("2001:db8::50"), nodeIP6, 30090), nftsim.FromNetwork), want{dnat: "[fd00:244:2::7]:8080", masquerade: true})
	check(t, "unallocated", sim.Send(tcp(a("fd00:244::1:5"), a("fd00:96::99"), 80), nftsim.FromNetwork), want{outcome: nftsim.Dropped})
}
