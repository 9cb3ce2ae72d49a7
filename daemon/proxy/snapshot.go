package proxy

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// snapshotSettings are the parts of a Snapshot that come from configuration.
type snapshotSettings struct {
	nodeName string
	// nodePortPrefixes is --nodeport-addresses as CIDRs; nil means primary.
	nodePortPrefixes []netip.Prefix
	clusterCIDRs     []netip.Prefix
	serviceCIDRs     []netip.Prefix
}

// snapshotter turns the tracker's work into Snapshots and the Changes against the last
// Snapshot committed (handed to a sync that succeeded). Only the sync loop uses it.
type snapshotter struct {
	settings  snapshotSettings
	byService map[types.NamespacedName][]desired.ServicePort
	ports     map[desired.ServicePortName][]desired.ServicePort
	// inputs identify the objects each committed Service was built from, so a full
	// resync skips Services whose Service, slices and node view are unchanged.
	inputs map[types.NamespacedName]string
	// healthChecks are the committed Services' health check node ports.
	healthChecks map[types.NamespacedName]healthCheck
	// committed is set once a snapshot was committed: before that there is no
	// previous state to call a flow stale against.
	committed bool
	// noLocal counts, per Service, its ports with a Local policy and endpoints only
	// elsewhere, for sync_proxy_rules_no_local_endpoints_total.
	noLocal map[types.NamespacedName]noLocalCount
}

type noLocalCount struct{ internal, external int }

func newSnapshotter(s snapshotSettings) *snapshotter {
	return &snapshotter{
		settings:     s,
		byService:    map[types.NamespacedName][]desired.ServicePort{},
		ports:        map[desired.ServicePortName][]desired.ServicePort{},
		inputs:       map[types.NamespacedName]string{},
		noLocal:      map[types.NamespacedName]noLocalCount{},
		healthChecks: map[types.NamespacedName]healthCheck{},
	}
}

// built is one sync's input, not yet committed.
type built struct {
	snapshot  *desired.Snapshot
	changes   desired.Changes
	byService map[types.NamespacedName][]desired.ServicePort
	inputs    map[types.NamespacedName]string
	noLocal   map[types.NamespacedName]noLocalCount
}

// build rebuilds the Services in w and compares them with the committed state. It
// changes nothing until commit, so a failed sync's work can be built again.
//
// The first build after start reports no stale UDP flows: what the previous run's
// rules did is unknown, and calling every flow to a UDP Service stale would cut each
// live one at every restart of plinthd.
func (s *snapshotter) build(w work) built {
	ports := maps.Clone(s.ports)
	b := built{
		byService: map[types.NamespacedName][]desired.ServicePort{},
		inputs:    map[types.NamespacedName]string{},
		noLocal:   map[types.NamespacedName]noLocalCount{},
		changes:   desired.Changes{Full: w.full, Changed: map[desired.ServicePortName]bool{}},
	}
	node := nodeView{name: s.settings.nodeName, zone: w.node.zone}
	stale := newStaleSet()
	for key, svc := range w.services {
		in := inputKey(svc, w.slices[key], node)
		if in != "" && in == s.inputs[key] {
			continue // built from exactly these objects before: nothing can differ
		}
		var now []desired.ServicePort
		if svc != nil {
			now = buildServicePorts(svc, w.slices[key], node)
		}
		before := s.byService[key]
		b.byService[key] = now
		b.inputs[key] = in
		b.noLocal[key] = countNoLocal(now)
		for _, p := range before {
			delete(ports, p.Name)
		}
		for _, p := range now {
			ports[p.Name] = append(ports[p.Name], p)
		}
		markChanged(b.changes.Changed, before, now)
		if s.committed {
			stale.add(before, now)
		}
	}
	b.changes.StaleUDPEndpoints, b.changes.StaleUDPServices = stale.lists()
	b.snapshot = &desired.Snapshot{
		NodeName:          s.settings.nodeName,
		NodeIPs:           slices.Clone(w.node.ips),
		NodePortAddresses: slices.Clone(s.settings.nodePortPrefixes),
		ClusterCIDRs:      slices.Clone(s.settings.clusterCIDRs),
		ServiceCIDRs:      slices.Clone(s.settings.serviceCIDRs),
		Services:          ports,
	}
	return b
}

// commit makes b the state the next build compares against.
func (s *snapshotter) commit(b built) {
	for key, now := range b.byService {
		if len(now) == 0 {
			delete(s.byService, key)
			delete(s.noLocal, key)
		} else {
			s.byService[key] = now
			s.noLocal[key] = b.noLocal[key]
		}
		if hc, ok := healthCheckOf(now); ok {
			s.healthChecks[key] = hc
		} else {
			delete(s.healthChecks, key)
		}
		if in := b.inputs[key]; in != "" {
			s.inputs[key] = in
		} else {
			delete(s.inputs, key)
		}
	}
	s.ports = b.snapshot.Services
	s.committed = true
}

// inputKey names the inputs of one Service's build: the Service's and each slice's
// resourceVersion and this node's view. It is empty (never reused) for a deleted
// Service or an object without a resourceVersion.
func inputKey(svc *corev1.Service, sl []*discoveryv1.EndpointSlice, node nodeView) string {
	if svc == nil || svc.ResourceVersion == "" {
		return ""
	}
	parts := make([]string, 0, len(sl)+3)
	parts = append(parts, node.name, node.zone, string(svc.UID)+"/"+svc.ResourceVersion)
	for _, e := range sl {
		if e.ResourceVersion == "" {
			return ""
		}
		parts = append(parts, e.Name+"/"+string(e.UID)+"/"+e.ResourceVersion)
	}
	slices.Sort(parts[3:])
	return strings.Join(parts, "|")
}

// noLocalTotals sums the committed per-Service counts.
func (s *snapshotter) noLocalTotals() (internal, external int) {
	for _, c := range s.noLocal {
		internal += c.internal
		external += c.external
	}
	return internal, external
}

func countNoLocal(ports []desired.ServicePort) noLocalCount {
	var c noLocalCount
	for _, p := range ports {
		if !p.HasEndpointsElsewhere {
			continue
		}
		if p.InternalPolicyLocal && len(p.ClusterEndpoints) == 0 {
			c.internal++
		}
		if p.ExternalPolicyLocal && p.ExternalEndpoints != nil && len(p.ExternalEndpoints) == 0 {
			c.external++
		}
	}
	return c
}

// markChanged adds every service port name whose ports differ between before and now.
func markChanged(changed map[desired.ServicePortName]bool, before, now []desired.ServicePort) {
	group := func(ps []desired.ServicePort) map[desired.ServicePortName][]desired.ServicePort {
		m := map[desired.ServicePortName][]desired.ServicePort{}
		for _, p := range ps {
			m[p.Name] = append(m[p.Name], p)
		}
		return m
	}
	b, n := group(before), group(now)
	for name, ps := range b {
		if !reflect.DeepEqual(ps, n[name]) {
			changed[name] = true
		}
	}
	for name := range n {
		if _, ok := b[name]; !ok {
			changed[name] = true
		}
	}
}
