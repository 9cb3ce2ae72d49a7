//go:build linux

package nftrules

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/nft"
)

// testNet is a node, a client host and two backend hosts ("pods": one on the node, one
// elsewhere), each in its own network namespace, their veths joined by a bridge in the
// node's namespace. The node routes between the client's network (192.0.2.0/24) and
// the pod network (10.244.0.0/16).
type testNet struct {
	node, client, local, remote kerneltest.NetNSHandle
}

func newTestNet(t testing.TB) *testNet {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.NFTables, kerneltest.Veth, kerneltest.Bridge)
	n := &testNet{node: kerneltest.NewNetNS(t), client: kerneltest.NewNetNS(t), local: kerneltest.NewNetNS(t), remote: kerneltest.NewNetNS(t)}
	n.node.Run(t, "ip", "link", "add", "br0", "type", "bridge")
	n.node.Run(t, "ip", "link", "set", "br0", "up")
	n.node.Run(t, "ip", "addr", "add", "192.0.2.10/24", "dev", "br0")
	n.node.Run(t, "ip", "addr", "add", "172.31.0.1/24", "dev", "br0") // a second, non-primary node address
	n.node.Run(t, "ip", "addr", "add", "10.244.0.1/16", "dev", "br0")
	n.node.Run(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	// Like any node, this one routes the service range somewhere (here: a default route
	// to nobody); without a route, packets to a ClusterIP nobody DNATs fail routing
	// before the forward hook can refuse them.
	n.node.Run(t, "ip", "route", "add", "default", "via", "192.0.2.1", "dev", "br0")
	// That route leads back out of br0, so the kernel would send the client an ICMP
	// redirect before the forward hook runs, and the per-host ICMP rate limit would then
	// swallow the port-unreachable a rejected UDP datagram earns.
	n.node.Run(t, "sysctl", "-qw", "net.ipv4.conf.all.send_redirects=0")
	n.node.Run(t, "sysctl", "-qw", "net.ipv4.conf.br0.send_redirects=0")
	// IPv6 alike (nodad: no duplicate address detection delay).
	n.node.Run(t, "ip", "addr", "add", "2001:db8::10/64", "dev", "br0", "nodad")
	n.node.Run(t, "ip", "addr", "add", "fd00:244::1/48", "dev", "br0", "nodad")
	n.node.Run(t, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	n.node.Run(t, "ip", "-6", "route", "add", "default", "via", "2001:db8::1", "dev", "br0")
	hosts := []struct {
		ns    kerneltest.NetNSHandle
		addr  string
		gw    string
		addr6 string
		gw6   string
	}{
		{n.client, "192.0.2.50/24", "192.0.2.10", "2001:db8::50/64", "2001:db8::10"},
		{n.local, "10.244.1.5/16", "10.244.0.1", "fd00:244::1:5/48", "fd00:244::1"},
		{n.remote, "10.244.2.7/16", "10.244.0.1", "fd00:244::2:7/48", "fd00:244::1"},
	}
	for i, h := range hosts {
		outer, inner := fmt.Sprintf("vh%d", i), "eth0"
		n.node.Run(t, "ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", h.ns.Name)
		n.node.Run(t, "ip", "link", "set", outer, "master", "br0", "up")
		h.ns.Run(t, "ip", "addr", "add", h.addr, "dev", inner)
		h.ns.Run(t, "ip", "link", "set", inner, "up")
		h.ns.Run(t, "ip", "route", "add", "default", "via", h.gw)
		h.ns.Run(t, "ip", "addr", "add", h.addr6, "dev", inner, "nodad")
		h.ns.Run(t, "ip", "-6", "route", "add", "default", "via", h.gw6)
	}
	return n
}

// serve answers every TCP connection on port with name, until the test ends.
func serve(t testing.TB, ns kerneltest.NetNSHandle, port int, name string) {
	var ln net.Listener
	ns.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil { // IPv4 and IPv6
			t.Fatalf("listen in %s: %v", ns.Name, err)
		}
	})
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
}

// serveUDP answers every datagram on port with name, until the test ends.
func serveUDP(t testing.TB, ns kerneltest.NetNSHandle, port int, name string) {
	var pc net.PacketConn
	ns.Do(t, func() {
		var err error
		if pc, err = net.ListenPacket("udp", fmt.Sprintf(":%d", port)); err != nil {
			t.Fatalf("listen udp in %s: %v", ns.Name, err)
		}
	})
	var wg sync.WaitGroup
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(name), from)
		}
	}()
}

// askUDP sends one datagram from the client host and returns the answer.
func (n *testNet) askUDP(t testing.TB, addr string) (string, error) {
	var c net.Conn
	var err error
	n.client.Do(t, func() { c, err = net.Dial("udp", addr) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("?")); err != nil {
		return "", err
	}
	buf := make([]byte, 64)
	k, err := c.Read(buf)
	return string(buf[:k]), err
}

// dial connects from the client host and returns what the server said.
func (n *testNet) dial(t testing.TB, addr string, timeout time.Duration) (string, error) {
	var c net.Conn
	var err error
	n.client.Do(t, func() { c, err = net.DialTimeout("tcp", addr, timeout) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

func (n *testNet) mustDial(t testing.TB, addr string) string {
	t.Helper()
	got, err := n.dial(t, addr, 3*time.Second)
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	return got
}

// opsSpy keeps the operations of the last applied batch.
type opsSpy struct {
	nft.Programmer
	last []string
}

func (o *opsSpy) Apply(ctx context.Context, b *nft.Batch) error {
	o.last = b.Ops()
	return o.Programmer.Apply(ctx, b)
}

func trafficSnapshot(services map[string]desired.ServicePort) *desired.Snapshot {
	snap := snapshotOf(services)
	snap.NodeIPs = []netip.Addr{nodeIP, nodeIP6, a("127.0.0.1"), a("::1")}
	snap.ClusterCIDRs = []netip.Prefix{podCIDR, podCIDR6}
	snap.ServiceCIDRs = []netip.Prefix{svcCIDR, svcCIDR6}
	return snap
}

func TestTraffic(t *testing.T) {
	n := newTestNet(t)
	serve(t, n.local, 8080, "local")
	serve(t, n.remote, 8080, "remote")
	serveUDP(t, n.local, 5353, "local")
	serveUDP(t, n.remote, 5353, "remote")
	ctx := context.Background()
	prog := &opsSpy{Programmer: nft.NewNetlink(n.node.Path)}
	clk := clocktesting.NewFakeClock(time.Now())
	s := New(prog, clk)

	local := ep("10.244.1.5", 8080, "node-1", true)
	remote := ep("10.244.2.7", 8080, "node-a", false)
	both := []desired.Endpoint{local, remote}
	services := map[string]desired.ServicePort{
		"spread": {ClusterIP: a("10.96.0.10"), Port: 80, ClusterEndpoints: both},
		// Both endpoints on other nodes: chosen through the shared service-endpoints map.
		"spread-map": {ClusterIP: a("10.96.0.16"), Port: 80, ClusterEndpoints: []desired.Endpoint{ep("10.244.1.5", 8080, "node-b", false), remote}},
		"affinity":   {ClusterIP: a("10.96.0.11"), Port: 80, SessionAffinity: time.Hour, ClusterEndpoints: both},
		"nodeport":   {ClusterIP: a("10.96.0.12"), Port: 80, NodePort: 30080, ClusterEndpoints: both, ExternalEndpoints: both},
		"nodeport-local": {ClusterIP: a("10.96.0.13"), Port: 80, NodePort: 30081, ExternalPolicyLocal: true,
			ClusterEndpoints: both, ExternalEndpoints: []desired.Endpoint{local}},
		"nodeport-local-elsewhere": {ClusterIP: a("10.96.0.14"), Port: 80, NodePort: 30082, ExternalPolicyLocal: true,
			ClusterEndpoints: []desired.Endpoint{remote}, HasEndpointsElsewhere: true},
		"no-endpoints": {ClusterIP: a("10.96.0.15"), Port: 80},
		"dns": {Protocol: desired.UDP, ClusterIP: a("10.96.0.53"), Port: 53,
			ClusterEndpoints: []desired.Endpoint{ep("10.244.1.5", 5353, "node-b", false), ep("10.244.2.7", 5353, "node-a", false)}},
		"dns-none": {Protocol: desired.UDP, ClusterIP: a("10.96.0.54"), Port: 53},
		"ipv6": {Family: desired.IPv6, ClusterIP: a("fd00:96::10"), Port: 80, NodePort: 30090,
			ClusterEndpoints:  []desired.Endpoint{ep("fd00:244::1:5", 8080, "node-b", false), ep("fd00:244::2:7", 8080, "node-a", false)},
			ExternalEndpoints: []desired.Endpoint{ep("fd00:244::1:5", 8080, "node-b", false), ep("fd00:244::2:7", 8080, "node-a", false)}},
	}
	if err := s.Sync(ctx, trafficSnapshot(services), desired.Changes{Full: true}); err != nil {
		t.Fatal(err)
	}

	t.Run("ClusterIP connections spread over all endpoints", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			seen[n.mustDial(t, "10.96.0.10:80")]++
		}
		if len(seen) != 2 {
			t.Errorf("40 connections reached %v, want both endpoints", seen)
		}
	})
	t.Run("ClusterIP through the endpoint map spreads too", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			seen[n.mustDial(t, "10.96.0.16:80")]++
		}
		if len(seen) != 2 {
			t.Errorf("40 connections reached %v, want both endpoints", seen)
		}
	})
	t.Run("replacing an endpoint deletes nothing", func(t *testing.T) {
		sp := services["spread-map"]
		// The remote endpoint is replaced by the local backend listening on a second
		// address (same count, so the rule stays and only elements change).
		n.local.Run(t, "ip", "addr", "add", "10.244.1.6/16", "dev", "eth0")
		sp.ClusterEndpoints = []desired.Endpoint{ep("10.244.1.5", 8080, "node-b", false), ep("10.244.1.6", 8080, "node-b", false)}
		services["spread-map"] = sp
		changed := map[desired.ServicePortName]bool{pn("spread-map", "http", desired.TCP): true}
		if err := s.Sync(ctx, trafficSnapshot(services), desired.Changes{Changed: changed}); err != nil {
			t.Fatal(err)
		}
		for _, op := range prog.last {
			if strings.HasPrefix(op, "delete") || strings.HasPrefix(op, "flush") {
				t.Errorf("replacing an endpoint sent %q", op)
			}
		}
		for i := 0; i < 20; i++ {
			if got := n.mustDial(t, "10.96.0.16:80"); got != "local" {
				t.Fatalf("after replacing the remote endpoint, a connection reached %q", got)
			}
		}
	})
	t.Run("IPv6 ClusterIP spreads over all endpoints", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			seen[n.mustDial(t, "[fd00:96::10]:80")]++
		}
		if len(seen) != 2 {
			t.Errorf("40 connections reached %v, want both endpoints", seen)
		}
	})
	t.Run("IPv6 NodePort on the primary address", func(t *testing.T) {
		if got := n.mustDial(t, "[2001:db8::10]:30090"); got != "local" && got != "remote" {
			t.Errorf("node port answered %q", got)
		}
	})
	t.Run("UDP to a ClusterIP reaches every endpoint", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			got, err := n.askUDP(t, "10.96.0.53:53")
			if err != nil {
				t.Fatalf("datagram %d: %v", i, err)
			}
			seen[got]++
		}
		if len(seen) != 2 {
			t.Errorf("40 datagrams (each from a new socket) reached %v, want both endpoints", seen)
		}
	})
	t.Run("UDP without endpoints is refused", func(t *testing.T) {
		if _, err := n.askUDP(t, "10.96.0.54:53"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("want connection refused (ICMP port unreachable), got %v", err)
		}
	})
	t.Run("ClientIP affinity sticks", func(t *testing.T) {
		first := n.mustDial(t, "10.96.0.11:80")
		for i := 0; i < 20; i++ {
			if got := n.mustDial(t, "10.96.0.11:80"); got != first {
				t.Fatalf("connection %d reached %s, the first reached %s", i+2, got, first)
			}
		}
	})
	t.Run("NodePort on the primary address only", func(t *testing.T) {
		if got := n.mustDial(t, "192.0.2.10:30080"); got != "local" && got != "remote" {
			t.Errorf("node port answered %q", got)
		}
		if got, err := n.dial(t, "172.31.0.1:30080", time.Second); err == nil {
			t.Errorf("node port on a non-primary address reached %q", got)
		}
	})
	t.Run("Local policy uses only the local endpoint", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			if got := n.mustDial(t, "192.0.2.10:30081"); got != "local" {
				t.Fatalf("Local node port reached %q", got)
			}
		}
	})
	t.Run("Local policy without a local endpoint drops", func(t *testing.T) {
		_, err := n.dial(t, "192.0.2.10:30082", 700*time.Millisecond)
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("want a timeout (dropped), got %v", err)
		}
	})
	t.Run("no endpoints refuses fast", func(t *testing.T) {
		start := time.Now()
		_, err := n.dial(t, "10.96.0.15:80", 5*time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("want connection refused, got %v", err)
		}
		// Generous bound: a drop would wait for the whole 5 s timeout.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("refusal took %v", d)
		}
	})
	t.Run("partial sync moves traffic", func(t *testing.T) {
		sp := services["spread"]
		sp.ClusterEndpoints = []desired.Endpoint{remote}
		services["spread"] = sp
		changed := map[desired.ServicePortName]bool{pn("spread", "http", desired.TCP): true}
		if err := s.Sync(ctx, trafficSnapshot(services), desired.Changes{Changed: changed}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if got := n.mustDial(t, "10.96.0.10:80"); got != "remote" {
				t.Fatalf("after removing the local endpoint, a connection reached %q", got)
			}
		}
	})
	t.Run("live tables read back as generated", func(t *testing.T) {
		rec := nft.NewRecorder()
		if err := New(rec, clock.RealClock{}).Sync(ctx, trafficSnapshot(services), desired.Changes{Full: true}); err != nil {
			t.Fatal(err)
		}
		// Later the cleanup drops replaced rules and old endpoint ranges.
		clk.Step(garbageMaxAge)
		if err := s.Sync(ctx, trafficSnapshot(services), desired.Changes{}); err != nil {
			t.Fatal(err)
		}
		var live strings.Builder
		if err := Dump(ctx, prog, &live); err != nil {
			t.Fatal(err)
		}
		var cmdOut, cmdErr strings.Builder
		if code := DumpCommand(ctx, []string{"--netns", n.node.Path}, &cmdOut, &cmdErr); code != 0 || cmdOut.String() != live.String() {
			t.Errorf("plinthctl proxy dump: exit %d, stderr %q, output differs from Dump: %v", code, cmdErr.String(), cmdOut.String() != live.String())
		}
		// The live table still holds the chains the partial sync left stale (flushed,
		// deleted a second later); compare without them.
		got := resolveEndpointBlocks(withoutStale(live.String(), s))
		if want := resolveEndpointBlocks(rec.Text(tableRef(desired.IPv4), tableRef(desired.IPv6))); got != want {
			t.Errorf("live tables differ from the generated ones:\n--- live ---\n%s\n--- generated ---\n%s", got, want)
		}
	})
	t.Run("nft prints the tables", func(t *testing.T) {
		kerneltest.Require(t, kerneltest.NFTBinary)
		out := n.node.Run(t, "nft", "list", "ruleset")
		for _, want := range []string{"table ip plinth", "table ip6 plinth", "chain nat-prerouting", "numgen random mod"} {
			if !strings.Contains(out, want) {
				t.Errorf("nft list ruleset lacks %q", want)
			}
		}
	})
	t.Run("cleanup leaves nothing", func(t *testing.T) {
		if err := s.Cleanup(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Cleanup(ctx); err != nil {
			t.Fatalf("second cleanup: %v", err)
		}
		for _, ref := range []nft.TableRef{tableRef(desired.IPv4), tableRef(desired.IPv6)} {
			if _, ok, err := prog.List(ctx, ref); err != nil || ok {
				t.Errorf("table %s after cleanup: present=%v err=%v", ref, ok, err)
			}
		}
		if out := n.node.Run(t, "sh", "-c", "nft list tables 2>/dev/null || true"); strings.TrimSpace(out) != "" {
			t.Errorf("nft still lists tables: %s", out)
		}
	})
}
