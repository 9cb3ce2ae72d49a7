package proxy

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// world drives a tracker and a snapshotter the way the sync loop does, committing
// every build (a successful sync).
type world struct {
	t       *testing.T
	tracker *tracker
	snap    *snapshotter
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, tracker: newTracker(), snap: newSnapshotter(snapshotSettings{nodeName: testNode})}
	w.tracker.setNode(nodeFacts{known: true, zone: "z1", ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
	return w
}

func (w *world) sync(full bool) built {
	b := w.snap.build(w.tracker.take(full))
	w.snap.commit(b)
	return b
}

var (
	dnsPort   = slicePortSpec{"dns", corev1.ProtocolUDP, 5353}
	udpDNSSvc = func(mutate ...func(*corev1.Service)) *corev1.Service {
		return service("kube-system", "dns", append([]func(*corev1.Service){func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}
		}}, mutate...)...)
	}
	dnsName = desired.ServicePortName{Namespace: "kube-system", Name: "dns", Port: "dns", Protocol: desired.UDP}
	webName = desired.ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: desired.TCP}
	vip     = netip.MustParseAddrPort("10.96.0.10:53")
)

func dnsSlice(version string, eps ...ep) *discoveryv1.EndpointSlice {
	s := endpointSlice("kube-system", "dns", "dns-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{dnsPort}, eps...)
	s.ResourceVersion = version
	return s
}

func changedNames(c desired.Changes) []string {
	var out []string
	for n := range c.Changed {
		out = append(out, n.String())
	}
	slices.Sort(out)
	return out
}

func TestSnapshotFirstSyncIsFullAndCarriesSettings(t *testing.T) {
	w := newWorld(t)
	w.snap.settings.nodePortPrefixes = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	w.snap.settings.clusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}
	w.snap.settings.serviceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	w.tracker.upsertService(service("default", "web"))
	b := w.sync(false)
	if !b.changes.Full {
		t.Fatal("the first sync after the node appeared is not full")
	}
	s := b.snapshot
	if s.NodeName != testNode || !slices.Equal(s.NodeIPs, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) {
		t.Fatalf("node %q ips %v", s.NodeName, s.NodeIPs)
	}
	if len(s.NodePortAddresses) != 1 || len(s.ClusterCIDRs) != 1 || len(s.ServiceCIDRs) != 1 {
		t.Fatalf("settings not carried: %v %v %v", s.NodePortAddresses, s.ClusterCIDRs, s.ServiceCIDRs)
	}
	if len(s.Services[webName]) != 1 {
		t.Fatalf("snapshot services = %v", s.Services)
	}
	if got := changedNames(b.changes); !slices.Equal(got, []string{webName.String()}) {
		t.Fatalf("changed = %v", got)
	}
}

func TestSnapshotPartialSyncNamesOnlyChangedPorts(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "web"))
	w.tracker.upsertService(udpDNSSvc())
	w.sync(true)

	// Nothing changed: an empty partial sync that keeps every service.
	b := w.sync(false)
	if b.changes.Full || len(b.changes.Changed) != 0 || len(b.snapshot.Services) != 2 {
		t.Fatalf("idle sync: full %v changed %v services %d", b.changes.Full, b.changes.Changed, len(b.snapshot.Services))
	}
	// A repeated event with the same resourceVersion changes nothing.
	if w.tracker.upsertService(service("default", "web")) {
		t.Fatal("same resourceVersion counted as a change")
	}
	// An update that does not alter the rules (a label) is not reported as changed.
	relabelled := service("default", "web", withVersion(2))
	relabelled.Labels = map[string]string{"team": "a"}
	w.tracker.upsertService(relabelled)
	if b := w.sync(false); len(b.changes.Changed) != 0 {
		t.Fatalf("a label change marked %v changed", changedNames(b.changes))
	}
	// An endpoint change marks exactly its service port.
	w.tracker.upsertSlice(endpointSlice("default", "web", "web-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, ep{addr: "10.244.0.7"}), time.Time{})
	b = w.sync(false)
	if got := changedNames(b.changes); !slices.Equal(got, []string{webName.String()}) {
		t.Fatalf("changed = %v", got)
	}
	if len(b.snapshot.Services[webName][0].ClusterEndpoints) != 1 {
		t.Fatalf("snapshot did not pick up the endpoint: %+v", b.snapshot.Services[webName])
	}
	// Deleting the service marks it and drops it from the snapshot.
	w.tracker.deleteService("default", "web")
	b = w.sync(false)
	if _, ok := b.snapshot.Services[webName]; ok || !b.changes.Changed[webName] {
		t.Fatalf("deleted service: in snapshot %v, changed %v", ok, b.changes.Changed[webName])
	}
	if len(b.snapshot.Services) != 1 {
		t.Fatalf("other services lost: %v", b.snapshot.Services)
	}
}

func TestSnapshotBuildWithoutCommitChangesNothing(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(udpDNSSvc())
	w.tracker.upsertSlice(dnsSlice("1", ep{addr: "10.244.0.7"}), time.Time{})
	w.sync(true)
	w.tracker.upsertSlice(dnsSlice("2", ep{addr: "10.244.0.8"}), time.Time{})
	work := w.tracker.take(false)
	failed := w.snap.build(work)
	// The sync failed: the work goes back and the runner's retry (a full sync) builds
	// it again, with the same stale flows.
	w.tracker.giveBack(work)
	retried := w.snap.build(w.tracker.take(true))
	if !reflect.DeepEqual(failed.changes.StaleUDPEndpoints, retried.changes.StaleUDPEndpoints) || len(retried.changes.StaleUDPEndpoints) == 0 {
		t.Fatalf("stale endpoints: failed sync %v, retry %v", failed.changes.StaleUDPEndpoints, retried.changes.StaleUDPEndpoints)
	}
}

func TestSnapshotNodeChangeForcesFullSync(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "web"))
	w.sync(true)
	if w.tracker.setNode(nodeFacts{known: true, zone: "z1", ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}, deleting: true}) {
		t.Fatal("deletion alone asked for a rule change")
	}
	if !w.tracker.nodeDeleting() {
		t.Fatal("deletion not recorded")
	}
	if !w.tracker.setNode(nodeFacts{known: true, zone: "z2", ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}) {
		t.Fatal("a zone change did not ask for a rule change")
	}
	b := w.sync(false)
	if !b.changes.Full || len(b.snapshot.Services) != 1 {
		t.Fatalf("after a zone change: full %v, services %d", b.changes.Full, len(b.snapshot.Services))
	}
}

func TestSnapshotSliceMovesBetweenServices(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "web"))
	w.tracker.upsertService(service("default", "web2", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"} }))
	sl := endpointSlice("default", "web", "shared", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, ep{addr: "10.244.0.7"})
	w.tracker.upsertSlice(sl, time.Time{})
	w.sync(true)
	moved := sl.DeepCopy()
	moved.ResourceVersion = "2"
	moved.Labels[discoveryv1.LabelServiceName] = "web2"
	w.tracker.upsertSlice(moved, time.Time{})
	b := w.sync(false)
	web2 := desired.ServicePortName{Namespace: "default", Name: "web2", Port: "http", Protocol: desired.TCP}
	if len(b.snapshot.Services[webName][0].ClusterEndpoints) != 0 || len(b.snapshot.Services[web2][0].ClusterEndpoints) != 1 {
		t.Fatalf("endpoints did not follow the slice: web %v, web2 %v", b.snapshot.Services[webName], b.snapshot.Services[web2])
	}
	if got := changedNames(b.changes); len(got) != 2 {
		t.Fatalf("changed = %v, want both services", got)
	}
}

func TestSnapshotNoLocalEndpointsCounts(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "web", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}))
	w.tracker.upsertSlice(endpointSlice("default", "web", "web-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort},
		ep{addr: "10.244.1.5", node: "node-b"}), time.Time{})
	w.sync(true)
	if in, ex := w.snap.noLocalTotals(); in != 1 || ex != 1 {
		t.Fatalf("no-local counts internal %d external %d, want 1 and 1", in, ex)
	}
	w.tracker.deleteService("default", "web")
	w.sync(false)
	if in, ex := w.snap.noLocalTotals(); in != 0 || ex != 0 {
		t.Fatalf("after delete: internal %d external %d", in, ex)
	}
}

func TestSnapshotFullResyncReusesUnchangedServices(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "web"))
	w.tracker.upsertSlice(endpointSlice("default", "web", "web-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort},
		ep{addr: "10.244.0.7", forZones: []string{"z1"}}, ep{addr: "10.244.1.5", forZones: []string{"z2"}}), time.Time{})
	first := w.sync(true)
	if got := addrs(first.snapshot.Services[webName][0].ClusterEndpoints); !slices.Equal(got, []string{"10.244.0.7"}) {
		t.Fatalf("zone z1 endpoints = %v", got)
	}
	again := w.sync(true)
	if !again.changes.Full || len(again.changes.Changed) != 0 || !reflect.DeepEqual(again.snapshot.Services, first.snapshot.Services) {
		t.Fatalf("full resync of unchanged objects: changed %v", changedNames(again.changes))
	}
	// The same objects seen from another zone are rebuilt.
	w.tracker.setNode(nodeFacts{known: true, zone: "z2", ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
	moved := w.sync(false)
	if got := addrs(moved.snapshot.Services[webName][0].ClusterEndpoints); !moved.changes.Changed[webName] || !slices.Equal(got, []string{"10.244.1.5"}) {
		t.Fatalf("after moving to zone z2: changed %v, endpoints %v", changedNames(moved.changes), got)
	}
}
