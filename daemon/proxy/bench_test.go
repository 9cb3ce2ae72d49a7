package proxy

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// scaleWorld is a committed state of n ClusterIP Services with 10 endpoints each.
func scaleWorld(b *testing.B, n int) (*world, []*discoveryv1.EndpointSlice) {
	w := &world{tracker: newTracker(), snap: newSnapshotter(snapshotSettings{nodeName: testNode})}
	w.tracker.setNode(nodeFacts{known: true, zone: "z1", ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
	sl := make([]*discoveryv1.EndpointSlice, n)
	for i := range n {
		name := fmt.Sprintf("svc-%d", i)
		ip := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).String()
		w.tracker.upsertService(service("default", name, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip} }))
		var eps []ep
		for j := range 10 {
			eps = append(eps, ep{addr: netip.AddrFrom4([4]byte{10, 244, byte(i >> 8), byte(i)}).Next().String()[:0] + fmt.Sprintf("10.%d.%d.%d", 100+j, byte(i>>8), byte(i)), node: "node-b"})
		}
		sl[i] = endpointSlice("default", name, name+"-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, eps...)
		w.tracker.upsertSlice(sl[i], time.Time{})
	}
	w.sync(true)
	return w, sl
}

// BenchmarkPartialSync measures what the control half spends on one changed Service
// among many: take, build, diff and commit (the rule syncer's share is not included).
func BenchmarkPartialSync(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w, sl := scaleWorld(b, n)
			b.ResetTimer()
			for i := range b.N {
				s := sl[i%n].DeepCopy()
				s.ResourceVersion = fmt.Sprint(i + 2)
				s.Endpoints = s.Endpoints[:9]
				w.tracker.upsertSlice(s, time.Time{})
				if got := w.sync(false); len(got.changes.Changed) != 1 {
					b.Fatalf("changed %d service ports", len(got.changes.Changed))
				}
			}
		})
	}
}

// BenchmarkFullSync measures a full rebuild of every Service.
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			w, _ := scaleWorld(b, n)
			b.ResetTimer()
			for range b.N {
				if got := w.sync(true); len(got.snapshot.Services) != n {
					b.Fatalf("%d services", len(got.snapshot.Services))
				}
			}
		})
	}
}
