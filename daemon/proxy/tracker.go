package proxy

import (
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeFacts is what the proxy reads from its own Node.
type nodeFacts struct {
	// ips are the node's InternalIP addresses in status order, loopback excluded:
	// NodePorts' listen addresses under --nodeport-addresses primary.
	ips  []netip.Addr
	zone string
	// deleting is true once the Node has a deletionTimestamp: /healthz then fails so
	// load balancers drain the node.
	deleting bool
	known    bool
}

func nodeFactsOf(n *corev1.Node) nodeFacts {
	f := nodeFacts{known: true, zone: n.Labels[corev1.LabelTopologyZone], deleting: n.DeletionTimestamp != nil}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsUnspecified() || slices.Contains(f.ips, ip) {
			continue
		}
		f.ips = append(f.ips, ip)
	}
	return f
}

// sameRules reports whether two views of the node give the same rules (deletion only
// changes health).
func (f nodeFacts) sameRules(o nodeFacts) bool {
	return f.zone == o.zone && slices.Equal(f.ips, o.ips)
}

// tracker holds the Services, EndpointSlices and node facts the informers delivered,
// and what changed since the last sync was taken. Informer handlers write to it; the
// sync loop takes work from it. It is safe for concurrent use.
type tracker struct {
	mu       sync.Mutex
	services map[types.NamespacedName]*corev1.Service
	// slices by owning Service, then by slice name; sliceOwner maps a slice back to
	// the Service it was filed under, in case its label changes.
	slices     map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice
	sliceOwner map[types.NamespacedName]types.NamespacedName
	node       nodeFacts

	dirty map[types.NamespacedName]bool
	// needFull is set when the node's rule-relevant facts changed or a full sync
	// failed: the next sync rebuilds every Service.
	needFull bool
	// triggers are the last-change-trigger-time annotations of slice changes not yet
	// synced, for network_programming_duration_seconds.
	triggers map[types.NamespacedName][]time.Time
	// pending counts of changes since the last take, for the *_changes_pending gauges.
	serviceChanges, endpointChanges int
}

func newTracker() *tracker {
	return &tracker{
		services:   map[types.NamespacedName]*corev1.Service{},
		slices:     map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice{},
		sliceOwner: map[types.NamespacedName]types.NamespacedName{},
		dirty:      map[types.NamespacedName]bool{},
		triggers:   map[types.NamespacedName][]time.Time{},
	}
}

// upsertService records a new or updated Service; it reports whether anything changed.
func (t *tracker) upsertService(svc *corev1.Service) bool {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.services[key]; ok && old.ResourceVersion == svc.ResourceVersion && old.ResourceVersion != "" {
		return false
	}
	t.services[key] = svc
	t.dirty[key] = true
	t.serviceChanges++
	return true
}

func (t *tracker) deleteService(namespace, name string) bool {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.services[key]; !ok {
		return false
	}
	delete(t.services, key)
	t.dirty[key] = true
	t.serviceChanges++
	return true
}

// serviceOfSlice is the Service an EndpointSlice belongs to, from its
// kubernetes.io/service-name label; ok is false for slices of no Service.
func serviceOfSlice(s *discoveryv1.EndpointSlice) (types.NamespacedName, bool) {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: s.Namespace, Name: name}, true
}

// upsertSlice records a new or updated EndpointSlice; it reports whether anything changed.
func (t *tracker) upsertSlice(s *discoveryv1.EndpointSlice, trigger time.Time) bool {
	sliceKey := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	svcKey, ok := serviceOfSlice(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ok {
		return t.removeSliceLocked(sliceKey)
	}
	if owner, filed := t.sliceOwner[sliceKey]; filed {
		if owner != svcKey {
			t.removeSliceLocked(sliceKey)
		} else if old := t.slices[owner][s.Name]; old != nil && old.ResourceVersion == s.ResourceVersion && old.ResourceVersion != "" {
			return false
		}
	}
	bySlice := t.slices[svcKey]
	if bySlice == nil {
		bySlice = map[string]*discoveryv1.EndpointSlice{}
		t.slices[svcKey] = bySlice
	}
	bySlice[s.Name] = s
	t.sliceOwner[sliceKey] = svcKey
	t.dirty[svcKey] = true
	t.endpointChanges++
	if !trigger.IsZero() {
		t.triggers[svcKey] = append(t.triggers[svcKey], trigger)
	}
	return true
}

func (t *tracker) deleteSlice(namespace, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeSliceLocked(types.NamespacedName{Namespace: namespace, Name: name})
}

func (t *tracker) removeSliceLocked(sliceKey types.NamespacedName) bool {
	owner, ok := t.sliceOwner[sliceKey]
	if !ok {
		return false
	}
	delete(t.sliceOwner, sliceKey)
	delete(t.slices[owner], sliceKey.Name)
	if len(t.slices[owner]) == 0 {
		delete(t.slices, owner)
	}
	t.dirty[owner] = true
	t.endpointChanges++
	return true
}

// setNode records this node's facts; it reports whether the rules may change (zone or
// addresses), which needs a full sync. Deletion alone changes only health.
func (t *tracker) setNode(f nodeFacts) (rulesChanged bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rulesChanged = !t.node.known || !t.node.sameRules(f)
	t.node = f
	if rulesChanged {
		t.needFull = true
	}
	return rulesChanged
}

func (t *tracker) nodeDeleting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.node.deleting
}

// work is what one sync builds from: the Services to rebuild with their slices.
type work struct {
	full bool
	node nodeFacts
	// services to rebuild; a nil value means the Service is gone.
	services map[types.NamespacedName]*corev1.Service
	slices   map[types.NamespacedName][]*discoveryv1.EndpointSlice
	triggers map[types.NamespacedName][]time.Time
	// serviceChanges and endpointChanges counted since the previous take.
	serviceChanges, endpointChanges int
}

// take hands the sync loop what changed since the last take (everything when full, or
// when the node changed) and starts a new change set. The objects are the informers'
// shared, read-only copies.
func (t *tracker) take(full bool) work {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := work{
		full:            full || t.needFull,
		node:            t.node,
		services:        map[types.NamespacedName]*corev1.Service{},
		slices:          map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		triggers:        t.triggers,
		serviceChanges:  t.serviceChanges,
		endpointChanges: t.endpointChanges,
	}
	keys := t.dirty
	if w.full {
		keys = maps.Clone(t.dirty)
		for k := range t.services {
			keys[k] = true
		}
	}
	for k := range keys {
		w.services[k] = t.services[k]
		if bySlice := t.slices[k]; len(bySlice) > 0 {
			w.slices[k] = slices.Collect(maps.Values(bySlice))
		}
	}
	t.dirty = map[types.NamespacedName]bool{}
	t.needFull = false
	t.triggers = map[types.NamespacedName][]time.Time{}
	t.serviceChanges, t.endpointChanges = 0, 0
	return w
}

// giveBack returns the work of a failed sync, so its Services are rebuilt and its
// trigger times observed by the next one.
func (t *tracker) giveBack(w work) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range w.services {
		t.dirty[k] = true
	}
	for k, ts := range w.triggers {
		t.triggers[k] = append(ts, t.triggers[k]...)
	}
	if w.full {
		t.needFull = true
	}
}

// pending reports the changes not yet taken, for the *_changes_pending gauges.
func (t *tracker) pending() (serviceChanges, endpointChanges int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.serviceChanges, t.endpointChanges
}
