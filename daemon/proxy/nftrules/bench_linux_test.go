//go:build linux

package nftrules

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/nft"
)

// scaleServices makes n ClusterIP services with 10 endpoints each (remote pods), the
// shape the benchmark asks for. Every tenth also has a NodePort.
func scaleServices(n int) map[desired.ServicePortName][]desired.ServicePort {
	out := make(map[desired.ServicePortName][]desired.ServicePort, n)
	for i := 0; i < n; i++ {
		name := desired.ServicePortName{Namespace: fmt.Sprintf("ns%d", i%100), Name: fmt.Sprintf("svc%d", i), Port: "http", Protocol: desired.TCP}
		sp := desired.ServicePort{Name: name, Family: desired.IPv4, Protocol: desired.TCP,
			ClusterIP: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80}
		if i%10 == 0 {
			sp.NodePort = uint16(30000 + i/10%2768)
		}
		for j := 0; j < 10; j++ {
			e := desired.Endpoint{Addr: netip.AddrFrom4([4]byte{10, byte(128 + j), byte(i >> 8), byte(i)}), Port: 8080,
				NodeName: fmt.Sprintf("node-%d", j), Ready: true, Serving: true}
			sp.ClusterEndpoints = append(sp.ClusterEndpoints, e)
		}
		if sp.NodePort != 0 {
			sp.ExternalEndpoints = sp.ClusterEndpoints
		}
		out[name] = []desired.ServicePort{sp}
	}
	return out
}

func scaleSnapshot(n int) *desired.Snapshot {
	return &desired.Snapshot{
		NodeName: "node-1", NodeIPs: []netip.Addr{nodeIP},
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")},
		ServiceCIDRs: []netip.Prefix{svcCIDR},
		Services:     scaleServices(n),
	}
}

// cpuTime is the process's user and system CPU time: on a shared machine it shows the
// work done, where wall time also counts waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkFullSync: a full sync of N services into an empty namespace, one batch.
// Reported: wall time of Sync (generation + netlink + kernel commit), Go heap held
// by the Syncer's record afterwards, and bytes allocated during the sync.
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			kerneltest.Require(b, kerneltest.Root, kerneltest.NetNS, kerneltest.NFTables)
			snap := scaleSnapshot(n)
			var total, cpu time.Duration
			var heap, alloc uint64
			for i := 0; i < b.N; i++ {
				ns := kerneltest.NewNetNS(b)
				s := New(nft.NewNetlink(ns.Path), clock.RealClock{})
				before := heapInUse()
				var ms0 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				start, cpu0 := time.Now(), cpuTime()
				if err := s.Sync(context.Background(), snap, desired.Changes{Full: true}); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				cpu += cpuTime() - cpu0
				var ms1 runtime.MemStats
				runtime.ReadMemStats(&ms1)
				alloc += ms1.TotalAlloc - ms0.TotalAlloc
				heap += heapInUse() - before
				runtime.KeepAlive(s)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/sync")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/sync")
			b.ReportMetric(float64(heap)/float64(b.N)/(1<<20), "MiB-record")
			b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "MiB-alloc/sync")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkOneChange: with 10,000 services programmed, the partial sync for one
// changed service port: an endpoint replaced by another (same count), an endpoint
// added (the count changes, so the service chain is rewritten), and a new service.
func BenchmarkOneChange(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.NetNS, kerneltest.NFTables)
	const n = 10000
	ns := kerneltest.NewNetNS(b)
	s := New(nft.NewNetlink(ns.Path), clock.RealClock{})
	snap := scaleSnapshot(n)
	ctx := context.Background()
	if err := s.Sync(ctx, snap, desired.Changes{Full: true}); err != nil {
		b.Fatal(err)
	}
	nameOf := func(k int) desired.ServicePortName {
		return desired.ServicePortName{Namespace: fmt.Sprintf("ns%d", k%100), Name: fmt.Sprintf("svc%d", k), Port: "http", Protocol: desired.TCP}
	}
	seq := 0
	cases := []struct {
		name   string
		change func(i int) desired.ServicePortName
	}{
		{"replace-endpoint", func(i int) desired.ServicePortName {
			name := nameOf(i % n)
			sp := snap.Services[name][0]
			eps := append([]desired.Endpoint(nil), sp.ClusterEndpoints...)
			seq++
			eps[0].Addr = netip.AddrFrom4([4]byte{10, 200, byte(seq >> 8), byte(seq)})
			sort.Slice(eps, func(x, y int) bool { return eps[x].Addr.Less(eps[y].Addr) })
			sp.ClusterEndpoints = eps
			snap.Services[name] = []desired.ServicePort{sp}
			return name
		}},
		{"add-endpoint", func(i int) desired.ServicePortName {
			name := nameOf((i + n/2) % n)
			sp := snap.Services[name][0]
			seq++
			sp.ClusterEndpoints = append(append([]desired.Endpoint(nil), sp.ClusterEndpoints...),
				desired.Endpoint{Addr: netip.AddrFrom4([4]byte{10, 201, byte(seq >> 8), byte(seq)}), Port: 8080, NodeName: "node-x", Ready: true, Serving: true})
			snap.Services[name] = []desired.ServicePort{sp}
			return name
		}},
		{"add-service", func(i int) desired.ServicePortName {
			seq++
			name := desired.ServicePortName{Namespace: "new", Name: fmt.Sprintf("svc%d", seq), Port: "http", Protocol: desired.TCP}
			sp := scaleServices(1)[nameOf(0)][0]
			sp.Name = name
			sp.ClusterIP = netip.AddrFrom4([4]byte{10, 97, byte(seq >> 8), byte(seq)})
			snap.Services[name] = []desired.ServicePort{sp}
			return name
		}},
	}
	// Each case runs back to back, and again with 100 ms between changes (untimed), as
	// the sync runner's minSyncPeriod spaces them: the kernel finishes releasing what the
	// previous transaction deleted in the background, and a transaction right behind it
	// waits for that.
	type variant struct {
		name  string
		pause time.Duration
	}
	for _, c := range cases {
		for _, v := range []variant{{c.name, 0}, {c.name + "-spaced", 100 * time.Millisecond}} {
			if c.name == "add-service" && v.pause > 0 {
				continue
			}
			benchChanges(b, v.name, v.pause, c.change, s, snap)
		}
	}
}

// benchChanges times partial syncs of the service ports change(i) returns, pausing
// (untimed) before each.
func benchChanges(b *testing.B, name string, pause time.Duration, change func(int) desired.ServicePortName, s *Syncer, snap *desired.Snapshot) {
	ctx := context.Background()
	b.Run(name, func(b *testing.B) {
		var times []time.Duration
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			port := change(i)
			time.Sleep(pause)
			start, cpu0 := time.Now(), cpuTime()
			if err := s.Sync(ctx, snap, desired.Changes{Changed: map[desired.ServicePortName]bool{port: true}}); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
			cpu += cpuTime() - cpu0
		}
		sort.Slice(times, func(x, y int) bool { return times[x] < times[y] })
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-p50")
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "ms-p99")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/change")
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkConnectLatency: TCP connection set-up time from a client host to a
// ClusterIP through the node, with 100 and with 30,000 services programmed. Both
// networks are built first and the dials alternate between them, so load on the
// shared machine affects both alike.
func BenchmarkConnectLatency(b *testing.B) {
	sizes := []int{100, 30000}
	nets := make([]*testNet, len(sizes))
	for i, n := range sizes {
		net := newTestNet(b)
		serve(b, net.local, 8080, "local")
		serve(b, net.remote, 8080, "remote")
		snap := scaleSnapshot(n - 1)
		target := desired.ServicePortName{Namespace: "bench", Name: "target", Port: "http", Protocol: desired.TCP}
		snap.Services[target] = []desired.ServicePort{{Name: target, Family: desired.IPv4, Protocol: desired.TCP,
			ClusterIP: a("10.96.255.254"), Port: 80,
			ClusterEndpoints: []desired.Endpoint{ep("10.244.1.5", 8080, "node-x", false), ep("10.244.2.7", 8080, "node-a", false)}}}
		s := New(nft.NewNetlink(net.node.Path), clock.RealClock{})
		if err := s.Sync(context.Background(), snap, desired.Changes{Full: true}); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 50; j++ { // warm ARP, routes and caches
			net.mustDial(b, "10.96.255.254:80")
		}
		nets[i] = net
	}
	times := make([][]time.Duration, len(sizes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, net := range nets {
			start := time.Now()
			net.mustDial(b, "10.96.255.254:80")
			times[k] = append(times[k], time.Since(start))
		}
	}
	b.StopTimer()
	p50 := make([]time.Duration, len(sizes))
	for k, n := range sizes {
		ts := times[k]
		sort.Slice(ts, func(x, y int) bool { return ts[x] < ts[y] })
		p50[k] = ts[len(ts)/2]
		b.ReportMetric(float64(p50[k].Microseconds()), fmt.Sprintf("µs-p50-%d", n))
		b.ReportMetric(float64(ts[len(ts)*9/10].Microseconds()), fmt.Sprintf("µs-p90-%d", n))
	}
	b.ReportMetric(float64(p50[1])/float64(p50[0]), "p50-ratio")
}
