package proxy

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

func staleEP(svc, endpoint string, nodePort uint16) desired.StaleUDPEndpoint {
	return desired.StaleUDPEndpoint{Service: netip.MustParseAddrPort(svc), Endpoint: netip.MustParseAddrPort(endpoint), NodePort: nodePort}
}

func staleSvc(svc string, nodePort uint16) desired.StaleUDPService {
	return desired.StaleUDPService{Service: netip.MustParseAddrPort(svc), NodePort: nodePort}
}

func TestStaleUDP(t *testing.T) {
	nodePortDNS := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30053
		s.Spec.ExternalIPs = []string{"192.0.2.50"}
	}
	for _, tc := range []struct {
		name     string
		setup    func(w *world)
		change   func(w *world)
		wantEPs  []desired.StaleUDPEndpoint
		wantSvcs []desired.StaleUDPService
	}{
		{
			name: "removed endpoint: flows to every service address via it",
			setup: func(w *world) {
				w.tracker.upsertService(udpDNSSvc(nodePortDNS))
				w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}, ep{addr: "10.244.0.8"}), time.Time{})
			},
			change: func(w *world) { w.tracker.upsertSlice(dnsSlice("2", ep{addr: "10.244.0.8"}), time.Time{}) },
			wantEPs: []desired.StaleUDPEndpoint{
				staleEP("10.96.0.10:53", "10.244.0.7:5353", 30053),
				staleEP("192.0.2.50:53", "10.244.0.7:5353", 0),
			},
		},
		{
			name: "endpoint turning not ready is stale",
			setup: func(w *world) {
				w.tracker.upsertService(udpDNSSvc())
				w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}, ep{addr: "10.244.0.8"}), time.Time{})
			},
			change: func(w *world) {
				w.tracker.upsertSlice(dnsSlice("2", ep{addr: "10.244.0.7", notReady: true, notServing: true}, ep{addr: "10.244.0.8"}), time.Time{})
			},
			wantEPs: []desired.StaleUDPEndpoint{staleEP("10.96.0.10:53", "10.244.0.7:5353", 0)},
		},
		{
			name: "scaled to zero: every endpoint and every service address",
			setup: func(w *world) {
				w.tracker.upsertService(udpDNSSvc())
				w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}), time.Time{})
			},
			change:   func(w *world) { w.tracker.upsertSlice(dnsSlice("2"), time.Time{}) },
			wantEPs:  []desired.StaleUDPEndpoint{staleEP("10.96.0.10:53", "10.244.0.7:5353", 0)},
			wantSvcs: []desired.StaleUDPService{staleSvc("10.96.0.10:53", 0)},
		},
		{
			name:     "service deleted: all its addresses and node port",
			setup:    func(w *world) { w.tracker.upsertService(udpDNSSvc(nodePortDNS)) },
			change:   func(w *world) { w.tracker.deleteService("kube-system", "dns") },
			wantSvcs: []desired.StaleUDPService{staleSvc("10.96.0.10:53", 30053), staleSvc("192.0.2.50:53", 0)},
		},
		{
			name:     "first endpoint of a service: flows that were never DNATed",
			setup:    func(w *world) { w.tracker.upsertService(udpDNSSvc()) },
			change:   func(w *world) { w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}), time.Time{}) },
			wantSvcs: []desired.StaleUDPService{staleSvc("10.96.0.10:53", 0)},
		},
		{
			name:  "external IP removed",
			setup: func(w *world) { w.tracker.upsertService(udpDNSSvc(nodePortDNS)) },
			change: func(w *world) {
				w.tracker.upsertService(udpDNSSvc(nodePortDNS, withVersion(2), func(s *corev1.Service) { s.Spec.ExternalIPs = nil }))
			},
			wantSvcs: []desired.StaleUDPService{staleSvc("192.0.2.50:53", 0)},
		},
		{
			name: "TCP changes never produce stale UDP flows",
			setup: func(w *world) {
				w.tracker.upsertService(service("default", "web"))
			},
			change: func(w *world) { w.tracker.deleteService("default", "web") },
		},
		{
			name: "unchanged endpoints produce nothing",
			setup: func(w *world) {
				w.tracker.upsertService(udpDNSSvc())
				w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}), time.Time{})
			},
			change: func(w *world) { w.tracker.upsertSlice(dnsSlice("2", ep{addr: "10.244.0.7"}), time.Time{}) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			w.sync(true)
			tc.change(w)
			b := w.sync(false)
			if !slices.Equal(b.changes.StaleUDPEndpoints, tc.wantEPs) {
				t.Errorf("stale endpoints = %v\nwant %v", b.changes.StaleUDPEndpoints, tc.wantEPs)
			}
			if !slices.Equal(b.changes.StaleUDPServices, tc.wantSvcs) {
				t.Errorf("stale services = %v\nwant %v", b.changes.StaleUDPServices, tc.wantSvcs)
			}
		})
	}
}

func TestConntrackMatches(t *testing.T) {
	got := conntrackMatches(
		[]desired.StaleUDPEndpoint{staleEP("10.96.0.10:53", "10.244.0.7:5353", 30053)},
		[]desired.StaleUDPService{staleSvc("192.0.2.50:53", 0), staleSvc("10.96.0.11:53", 30054)},
	)
	want := []string{
		"udp to 10.96.0.10:53 via 10.244.0.7:5353",
		"udp to *:30053 via 10.244.0.7:5353",
		"udp to 192.0.2.50:53",
		"udp to 10.96.0.11:53",
		"udp to *:30054",
	}
	var gotText []string
	for _, m := range got {
		gotText = append(gotText, m.String())
	}
	if !slices.Equal(gotText, want) {
		t.Fatalf("matches = %q\nwant %q", gotText, want)
	}
}

func TestStaleUDPNothingOnTheFirstSync(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(udpDNSSvc())
	w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}), time.Time{})
	b := w.sync(true)
	if len(b.changes.StaleUDPEndpoints) != 0 || len(b.changes.StaleUDPServices) != 0 {
		t.Fatalf("first sync after start calls flows stale: %v %v", b.changes.StaleUDPEndpoints, b.changes.StaleUDPServices)
	}
	if len(b.snapshot.Services[dnsName]) != 1 {
		t.Fatalf("snapshot = %v", b.snapshot.Services)
	}
}
