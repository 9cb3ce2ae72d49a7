package podnet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/linkns"
)

// The kernel tests run a Bridge in a fresh namespace acting as the node, with the pod
// namespaces' files in a temporary directory; every pod is torn down and the node
// cleaned up even when a test fails (the node namespace goes with its links anyway).

// ioTimeout bounds each connection so a broken network fails instead of hanging.
const ioTimeout = 10 * time.Second

type kernelNode struct {
	t      *testing.T
	ns     kerneltest.NetNSHandle
	cfg    Config
	bridge *Bridge
}

func newKernelNode(t *testing.T, podCIDRs ...string) *kernelNode {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.Veth, kerneltest.Bridge, kerneltest.NFTables)
	ns := kerneltest.NewNetNS(t)
	dir := t.TempDir()
	cfg := Config{PodCIDRs: mustPrefixes(podCIDRs...), NodeNetNS: ns.Path,
		NetNSDir: filepath.Join(dir, "netns"), StateDir: filepath.Join(dir, "state")}
	n := &kernelNode{t: t, ns: ns, cfg: cfg}
	n.bridge = n.reopen()
	t.Cleanup(func() {
		for _, uid := range n.bridge.Allocator().Pods() {
			if err := n.bridge.Teardown(context.Background(), uid); err != nil {
				t.Errorf("teardown %s: %v", uid, err)
			}
		}
		if err := n.bridge.Cleanup(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return n
}

// reopen builds a new Bridge over the same directories, as a restarted plinthd would.
func (n *kernelNode) reopen() *Bridge {
	n.t.Helper()
	b, err := New(n.cfg, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	return b
}

func (n *kernelNode) setup(uid string) Attachment {
	n.t.Helper()
	a, err := n.bridge.Setup(n.t.Context(), uid, "")
	if err != nil {
		n.t.Fatalf("setup %s: %v", uid, err)
	}
	return a
}

// inNetNS runs fn on a fresh locked thread inside the namespace at path; the thread is
// never unlocked, so it ends with the goroutine rather than going back to the pool in
// a foreign namespace. Sockets made in fn stay in that namespace.
func inNetNS(t *testing.T, path string, fn func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.GetFromPath(path)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// listen opens a TCP echo-greeting listener in the namespace at path: every
// connection is answered with greeting and the peer's address, then closed.
func listen(t *testing.T, path, addr, greeting string) string {
	t.Helper()
	var ln net.Listener
	if err := inNetNS(t, path, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, path, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s from %s", greeting, c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap())
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// dial connects from the namespace at path and returns what the listener said.
func dial(t *testing.T, path, addr string) (string, error) {
	t.Helper()
	var c net.Conn
	err := inNetNS(t, path, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, ioTimeout)
		return err
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestTwoPodsReachEachOtherAndTheGateway(t *testing.T) {
	n := newKernelNode(t, "10.244.7.0/24", "fd00:10:244:7::/64")
	a, b := n.setup("pod-a"), n.setup("pod-b")
	if len(a.IPs) != 2 || len(b.IPs) != 2 || a.IPs[0] == b.IPs[0] || a.IPs[1] == b.IPs[1] {
		t.Fatalf("pods got %v and %v; want one address per family each, all distinct", a.IPs, b.IPs)
	}
	for _, ip := range append(slices.Clone(a.IPs), b.IPs...) {
		if !n.cfg.PodCIDRs[0].Contains(ip) && !n.cfg.PodCIDRs[1].Contains(ip) {
			t.Errorf("%s is outside the pod CIDRs", ip)
		}
	}
	if a.NetNSPath != filepath.Join(n.cfg.NetNSDir, "pod-a") {
		t.Errorf("netns path %s, want under %s named by the UID", a.NetNSPath, n.cfg.NetNSDir)
	}

	// Pod A serves on both families; B reaches it on each.
	listen(t, a.NetNSPath, "[::]:8080", "pod-a")
	for i, ip := range a.IPs {
		got, err := dial(t, b.NetNSPath, netip.AddrPortFrom(ip, 8080).String())
		if err != nil {
			t.Fatalf("pod-b to pod-a at %s: %v", ip, err)
		}
		if want := "pod-a from " + b.IPs[i].String(); got != want {
			t.Errorf("pod-b to pod-a at %s: %q, want %q (no masquerading inside the cluster)", ip, got, want)
		}
	}
	// The node answers on each gateway.
	listen(t, n.ns.Path, "[::]:9090", "node")
	for i, p := range n.cfg.PodCIDRs {
		gw := Gateway(p)
		got, err := dial(t, a.NetNSPath, netip.AddrPortFrom(gw, 9090).String())
		if err != nil {
			t.Fatalf("pod-a to the gateway %s: %v", gw, err)
		}
		if want := "node from " + a.IPs[i].String(); got != want {
			t.Errorf("pod-a to the gateway %s: %q, want %q", gw, got, want)
		}
	}
	out := n.ns.Run(t, "sysctl", "-n", "net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding")
	if strings.Fields(out)[0] != "1" || strings.Fields(out)[1] != "1" {
		t.Errorf("forwarding in the node namespace: %q, want 1 and 1", out)
	}
}

func TestSetupTwiceIsIdempotent(t *testing.T) {
	n := newKernelNode(t, "10.244.8.0/24")
	first := n.setup("pod-a")
	second := n.setup("pod-a")
	if !slices.Equal(first.IPs, second.IPs) || first.NetNSPath != second.NetNSPath {
		t.Fatalf("second setup %+v, first %+v; want the same", second, first)
	}
	// One veth for the pod in the node, one eth0 with one address in the pod.
	links := n.ns.Run(t, "ip", "-o", "link", "show", "master", DefaultBridgeName)
	if c := strings.Count(links, hostIfPrefix); c != 1 {
		t.Errorf("bridge ports after two setups: %d, want 1:\n%s", c, links)
	}
	addrs := runIn(t, first.NetNSPath, "ip", "-o", "-4", "addr", "show", "dev", "eth0")
	if c := strings.Count(addrs, "inet "); c != 1 || !strings.Contains(addrs, first.IPs[0].String()+"/32") {
		t.Errorf("eth0 addresses after two setups: %q, want %s/32 once", addrs, first.IPs[0])
	}
	routes := runIn(t, first.NetNSPath, "ip", "-4", "route", "show", "default")
	if !strings.Contains(routes, "via 10.244.8.1 dev eth0") {
		t.Errorf("default route %q, want via the gateway 10.244.8.1", routes)
	}
	// A pod whose eth0 was removed behind plinthd's back is repaired by Setup.
	runIn(t, first.NetNSPath, "ip", "link", "del", "eth0")
	repaired := n.setup("pod-a")
	listen(t, n.ns.Path, "0.0.0.0:9090", "node")
	if got, err := dial(t, repaired.NetNSPath, "10.244.8.1:9090"); err != nil || got != "node from "+first.IPs[0].String() {
		t.Errorf("after repair: %q, %v", got, err)
	}
}

// runIn runs a command inside the namespace at path (nsenter, since pod namespaces are
// not under /run/netns).
func runIn(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := execIn(path, args...)
	if err != nil {
		t.Fatalf("%v in %s: %v: %s", args, path, err, out)
	}
	return out
}

func TestTeardownRemovesEverythingAndStateSurvivesRestart(t *testing.T) {
	n := newKernelNode(t, "10.244.9.0/24")
	kept := n.setup("pod-kept")
	gone := n.setup("pod-gone")
	if err := n.bridge.Teardown(t.Context(), "pod-gone"); err != nil {
		t.Fatal(err)
	}
	if err := n.bridge.Teardown(t.Context(), "pod-gone"); err != nil {
		t.Errorf("second teardown: %v", err)
	}
	if _, err := os.Stat(gone.NetNSPath); !os.IsNotExist(err) {
		t.Errorf("netns file of a torn-down pod: %v, want gone", err)
	}
	if ok, err := linkns.NewHost(n.ns.Path).LinkExists(hostInterfaceName("pod-gone")); ok || err != nil {
		t.Errorf("host veth of a torn-down pod: exists=%v, %v", ok, err)
	}

	// A restarted plinthd: the kept pod keeps its address; a new pod gets another one.
	n.bridge = n.reopen()
	again := n.setup("pod-kept")
	if !slices.Equal(again.IPs, kept.IPs) {
		t.Errorf("after restart pod-kept has %v, had %v", again.IPs, kept.IPs)
	}
	fresh := n.setup("pod-new")
	if fresh.IPs[0] == kept.IPs[0] {
		t.Errorf("new pod got %s, which pod-kept holds", fresh.IPs[0])
	}
	listen(t, kept.NetNSPath, "0.0.0.0:8080", "kept")
	if got, err := dial(t, fresh.NetNSPath, netip.AddrPortFrom(kept.IPs[0], 8080).String()); err != nil || !strings.HasPrefix(got, "kept") {
		t.Errorf("new pod to kept pod after restart: %q, %v", got, err)
	}
}

func TestPodTrafficLeavingTheClusterIsMasqueraded(t *testing.T) {
	n := newKernelNode(t, "10.244.10.0/24")
	pod := n.setup("pod-a")
	// An outside host on a link of its own, with no route back to the pod CIDR: only a
	// masqueraded connection can be answered.
	outside := kerneltest.NewNetNS(t)
	suffix := fmt.Sprint(os.Getpid() % 100000)
	n.ns.Run(t, "ip", "link", "add", "up"+suffix, "type", "veth", "peer", "name", "out"+suffix, "netns", outside.Name)
	n.ns.Run(t, "ip", "addr", "add", "192.0.2.1/24", "dev", "up"+suffix)
	n.ns.Run(t, "ip", "link", "set", "up"+suffix, "up")
	outside.Run(t, "ip", "addr", "add", "192.0.2.2/24", "dev", "out"+suffix)
	outside.Run(t, "ip", "link", "set", "out"+suffix, "up")
	listen(t, outside.Path, "0.0.0.0:7070", "outside")
	got, err := dial(t, pod.NetNSPath, "192.0.2.2:7070")
	if err != nil {
		t.Fatalf("pod to an outside host: %v", err)
	}
	if got != "outside from 192.0.2.1" {
		t.Errorf("outside host saw %q, want the node's address 192.0.2.1", got)
	}
	// Without the table the outside host cannot answer: the test above is not passing
	// for some other reason.
	if err := deleteMasquerade(n.ns.Path, DefaultTableName); err != nil {
		t.Fatal(err)
	}
	var c net.Conn
	err = inNetNS(t, pod.NetNSPath, func() (err error) {
		c, err = net.DialTimeout("tcp", "192.0.2.2:7070", time.Second)
		return err
	})
	if err == nil {
		c.Close()
		t.Error("pod reached the outside host without the masquerade table")
	}
}

func TestCleanupRemovesBridgeAndTable(t *testing.T) {
	n := newKernelNode(t, "10.244.11.0/24")
	n.setup("pod-a")
	if err := n.bridge.Teardown(t.Context(), "pod-a"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.ns.Run(t, "ip", "-o", "link"), DefaultBridgeName) {
		t.Fatal("no bridge before cleanup")
	}
	if err := n.bridge.Cleanup(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := n.bridge.Cleanup(t.Context()); err != nil {
		t.Errorf("second cleanup: %v", err)
	}
	if out := n.ns.Run(t, "ip", "-o", "link"); strings.Contains(out, DefaultBridgeName) {
		t.Errorf("bridge left after cleanup:\n%s", out)
	}
	if ok, err := tableExists(n.ns.Path, DefaultTableName); ok || err != nil {
		t.Errorf("table inet %s after cleanup: exists=%v, %v", DefaultTableName, ok, err)
	}
}

func TestParallelSetupsAndTeardowns(t *testing.T) {
	n := newKernelNode(t, "10.244.12.0/24")
	const pods = 16
	got := make([]Attachment, pods)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			// Each pod twice at once: the per-pod lock keeps it to one namespace.
			var inner sync.WaitGroup
			var both [2]Attachment
			for j := range 2 {
				inner.Go(func() {
					a, err := n.bridge.Setup(t.Context(), fmt.Sprintf("pod-%d", i), "")
					if err != nil {
						t.Errorf("setup pod-%d: %v", i, err)
					}
					both[j] = a
				})
			}
			inner.Wait()
			if !slices.Equal(both[0].IPs, both[1].IPs) || both[0].NetNSPath != both[1].NetNSPath {
				t.Errorf("pod-%d set up twice at once: %+v and %+v", i, both[0], both[1])
			}
			got[i] = both[0]
		})
	}
	wg.Wait()
	seen := map[netip.Addr]bool{}
	for i, a := range got {
		if len(a.IPs) != 1 || seen[a.IPs[0]] {
			t.Errorf("pod-%d: %v (duplicate or missing)", i, a.IPs)
		}
		if len(a.IPs) == 1 {
			seen[a.IPs[0]] = true
		}
	}
	if mounts := countMounts(t, n.cfg.NetNSDir); mounts != pods {
		t.Errorf("%d namespace mounts for %d pods", mounts, pods)
	}
	for i := range pods {
		wg.Go(func() {
			if err := n.bridge.Teardown(t.Context(), fmt.Sprintf("pod-%d", i)); err != nil {
				t.Errorf("teardown pod-%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if out := n.ns.Run(t, "ip", "-o", "link"); strings.Contains(out, hostIfPrefix) {
		t.Errorf("pod links left after teardown:\n%s", out)
	}
	if mounts := countMounts(t, n.cfg.NetNSDir); mounts != 0 {
		t.Errorf("%d namespace mounts left after teardown", mounts)
	}
	if left := n.bridge.Allocator().Pods(); len(left) != 0 {
		t.Errorf("addresses still held by %v", left)
	}
}

// countMounts counts the mounts under dir in this process's mount table.
func countMounts(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	c := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			c++
		}
	}
	return c
}

// BenchmarkSetup is one pod's network set up (the part of a pod's start latency that
// is the network's), on a node whose bridge and table exist; the teardown after each
// is not timed (BenchmarkTeardown times it).
func BenchmarkSetup(b *testing.B) { benchmarkPod(b, true) }

// BenchmarkTeardown is one pod's network torn down; the setup before each is not timed.
func BenchmarkTeardown(b *testing.B) { benchmarkPod(b, false) }

func benchmarkPod(b *testing.B, timeSetup bool) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.NetNS, kerneltest.Veth, kerneltest.Bridge, kerneltest.NFTables)
	ns := kerneltest.NewNetNS(b)
	dir := b.TempDir()
	br, err := New(Config{PodCIDRs: mustPrefixes("10.244.13.0/24"), NodeNetNS: ns.Path,
		NetNSDir: filepath.Join(dir, "netns"), StateDir: filepath.Join(dir, "state")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Cleanup(context.Background()) })
	if err := br.EnsureNode(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !timeSetup {
			b.StopTimer()
		}
		if _, err := br.Setup(b.Context(), "bench-pod", ""); err != nil {
			b.Fatal(err)
		}
		if timeSetup {
			b.StopTimer()
		} else {
			b.StartTimer()
		}
		if err := br.Teardown(b.Context(), "bench-pod"); err != nil {
			b.Fatal(err)
		}
		if timeSetup {
			b.StartTimer()
		}
	}
}

// A pod reaches itself through a Service address DNATed to it and masqueraded, as the
// Service proxy's rules do for hairpin connections (a table of the test's here). Where
// bridge netfilter is on, the DNATed connection is bridged back out of the port it
// came in by, which only the port's hairpin mode allows: without it the connection
// fails, the control that this test is not passing for some other reason.
func TestPodReachesItselfThroughAServiceAddress(t *testing.T) {
	kerneltest.Require(t, kerneltest.NFTBinary)
	n := newKernelNode(t, "10.244.12.0/24")
	pod := n.setup("pod-a")
	self := pod.IPs[0].String()
	listen(t, pod.NetNSPath, "0.0.0.0:8080", "pod-a")
	rules := fmt.Sprintf(`table ip hairpin-test {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr 10.96.0.10 tcp dport 80 dnat to %[1]s:8080
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %[1]s ip daddr %[1]s masquerade
	}
}
`, self)
	path := filepath.Join(t.TempDir(), "hairpin.nft")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	n.ns.Run(t, "nft", "-f", path)
	gateway := Gateway(n.cfg.PodCIDRs[0]).String()
	got, err := dial(t, pod.NetNSPath, "10.96.0.10:80")
	if err != nil {
		t.Fatalf("pod-a to itself through 10.96.0.10:80: %v", err)
	}
	if want := "pod-a from " + gateway; got != want {
		t.Errorf("pod-a to itself through 10.96.0.10:80: %q, want %q (masqueraded to the gateway)", got, want)
	}

	if out, err := execIn(n.ns.Path, "sysctl", "-n", "net.bridge.bridge-nf-call-iptables"); err != nil || strings.TrimSpace(out) != "1" {
		t.Logf("no bridge netfilter here (%q, %v): the connection is routed, hairpin mode is not what carries it", out, err)
		return
	}
	n.ns.Run(t, "bridge", "link", "set", "dev", hostInterfaceName("pod-a"), "hairpin", "off")
	var c net.Conn
	err = inNetNS(t, pod.NetNSPath, func() (err error) {
		c, err = net.DialTimeout("tcp", "10.96.0.10:80", time.Second)
		return err
	})
	if err == nil {
		c.Close()
		t.Error("pod-a reached itself through 10.96.0.10:80 with its port's hairpin mode off")
	}
}
