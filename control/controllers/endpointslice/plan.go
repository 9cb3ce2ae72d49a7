package endpointslice

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ManagedBy is this controller's value of the endpointslice.kubernetes.io/managed-by
// label; slices with another value are someone else's.
const ManagedBy = "endpointslice-controller.plinth.dev"

// labelHeadless marks slices of headless Services, as kube-controller-manager does.
const labelHeadless = "service.kubernetes.io/headless"

// slicePlan is what one sync writes. Updates are modified copies of cached slices
// (with their resourceVersion, so a concurrent change conflicts); creates have a
// generateName.
type slicePlan struct {
	creates []*discoveryv1.EndpointSlice
	updates []*discoveryv1.EndpointSlice
	deletes []*discoveryv1.EndpointSlice
}

func (p slicePlan) empty() bool {
	return len(p.creates)+len(p.updates)+len(p.deletes) == 0
}

// workingSlice is an existing slice being planned.
type workingSlice struct {
	orig      *discoveryv1.EndpointSlice
	group     *endpointGroup
	endpoints []discoveryv1.Endpoint
	changed   bool
}

// planSlices decides which slices to create, update and delete so that existing (the
// cache's slices managed by this controller for svc) holds exactly the desired
// endpoints, at most maxPerSlice per slice, touching as few slices as it can.
func planSlices(svc *v1.Service, existing []*discoveryv1.EndpointSlice, want desiredState, maxPerSlice int) slicePlan {
	groups := want.groups
	// A Service without endpoints keeps one empty slice of its primary family, so
	// readers can tell "no endpoints" from "not processed yet".
	placeholder := groupKey{addressType: addressTypes(svc)[0]}
	if len(groups) == 0 {
		groups = map[groupKey]*endpointGroup{placeholder: {addressType: placeholder.addressType,
			ports: []discoveryv1.EndpointPort{}, endpoints: map[string]discoveryv1.Endpoint{}}}
	}
	labels := sliceLabels(svc)
	owner := ownerReference(svc)

	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	byGroup := map[groupKey][]*discoveryv1.EndpointSlice{}
	// pool holds slices to delete unless a new slice of their address type can reuse
	// them: an update is as cheap as a create and saves the delete.
	var pool, foreign []*discoveryv1.EndpointSlice
	for _, s := range existing {
		gk := groupKey{addressType: s.AddressType, ports: portsKey(s.Ports)}
		switch {
		case !ownedBy(s, svc.UID):
			foreign = append(foreign, s) // an earlier Service of the same name
		case groups[gk] == nil:
			pool = append(pool, s)
		default:
			byGroup[gk] = append(byGroup[gk], s)
		}
	}

	var written []*workingSlice
	var plan slicePlan
	takeFromPool := func(t discoveryv1.AddressType) *discoveryv1.EndpointSlice {
		for i, s := range pool {
			if s.AddressType == t {
				pool = slices.Delete(pool, i, i+1)
				return s
			}
		}
		return nil
	}
	newSlice := func(g *endpointGroup, eps []discoveryv1.Endpoint) {
		if s := takeFromPool(g.addressType); s != nil {
			written = append(written, &workingSlice{orig: s, group: g, endpoints: eps, changed: true})
			return
		}
		plan.creates = append(plan.creates, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{GenerateName: svc.Name + "-", Namespace: svc.Namespace,
				Labels: maps.Clone(labels), OwnerReferences: []metav1.OwnerReference{owner}},
			AddressType: g.addressType,
			Ports:       slices.Clone(g.ports),
			Endpoints:   eps,
		})
	}

	keys := slices.SortedFunc(maps.Keys(groups), func(a, b groupKey) int {
		if c := strings.Compare(string(a.addressType), string(b.addressType)); c != 0 {
			return c
		}
		return strings.Compare(a.ports, b.ports)
	})
	// Match first, over every group, so the pool is complete before any placement.
	type groupWork struct {
		remaining     map[string]discoveryv1.Endpoint
		kept, changed []*workingSlice
	}
	work := make(map[groupKey]*groupWork, len(groups))
	for _, gk := range keys {
		g := groups[gk]
		gw := &groupWork{remaining: maps.Clone(g.endpoints)}
		work[gk] = gw
		for _, s := range byGroup[gk] {
			w := &workingSlice{orig: s, group: g, changed: !metadataMatches(s, labels, owner)}
			for _, ep := range s.Endpoints {
				var d discoveryv1.Endpoint
				ok := len(ep.Addresses) > 0 && len(w.endpoints) < maxPerSlice
				if ok {
					d, ok = gw.remaining[ep.Addresses[0]]
				}
				if !ok { // gone, a duplicate, or beyond the limit (then placed again below)
					w.changed = true
					continue
				}
				delete(gw.remaining, ep.Addresses[0])
				if !apiequality.Semantic.DeepEqual(ep, d) {
					w.changed = true
				}
				w.endpoints = append(w.endpoints, d)
			}
			switch {
			case len(w.endpoints) == 0 && (gk != placeholder || len(g.endpoints) > 0 || len(gw.kept)+len(gw.changed) > 0):
				pool = append(pool, s) // empty: deleted unless reused
			case w.changed:
				gw.changed = append(gw.changed, w)
			default:
				gw.kept = append(gw.kept, w)
			}
		}
	}
	slices.SortFunc(pool, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })

	for _, gk := range keys {
		g, gw := groups[gk], work[gk]
		remaining, kept, changed := gw.remaining, gw.kept, gw.changed
		toPlace := slices.Sorted(maps.Keys(remaining))
		// First into slices written anyway.
		for _, w := range changed {
			n := min(maxPerSlice-len(w.endpoints), len(toPlace))
			for _, addr := range toPlace[:n] {
				w.endpoints = append(w.endpoints, remaining[addr])
			}
			toPlace = toPlace[n:]
		}
		// Then, if they all fit, into the fullest unchanged slice with room.
		if len(toPlace) > 0 {
			var best *workingSlice
			for _, w := range kept {
				if len(w.endpoints)+len(toPlace) <= maxPerSlice && (best == nil || len(w.endpoints) > len(best.endpoints)) {
					best = w
				}
			}
			if best != nil {
				for _, addr := range toPlace {
					best.endpoints = append(best.endpoints, remaining[addr])
				}
				best.changed = true
				toPlace = nil
			}
		}
		// Then into new slices.
		for len(toPlace) > 0 {
			n := min(maxPerSlice, len(toPlace))
			eps := make([]discoveryv1.Endpoint, 0, n)
			for _, addr := range toPlace[:n] {
				eps = append(eps, remaining[addr])
			}
			toPlace = toPlace[n:]
			newSlice(g, eps)
		}
		if gk == placeholder && len(g.endpoints) == 0 && len(kept)+len(changed) == 0 {
			newSlice(g, []discoveryv1.Endpoint{})
		}
		for _, w := range append(kept, changed...) {
			if w.changed {
				written = append(written, w)
			}
		}
	}

	for _, w := range written {
		s := w.orig.DeepCopy()
		s.Labels = maps.Clone(labels)
		s.OwnerReferences = []metav1.OwnerReference{owner}
		s.Ports = slices.Clone(w.group.ports)
		s.Endpoints = w.endpoints
		plan.updates = append(plan.updates, s)
	}
	plan.deletes = append(pool, foreign...)
	return plan
}

// sliceLabels are the Service's labels plus the two that tie a slice to it and to this
// controller, and the headless marker for headless Services.
func sliceLabels(svc *v1.Service) map[string]string {
	labels := make(map[string]string, len(svc.Labels)+3)
	for k, v := range svc.Labels {
		labels[k] = v
	}
	delete(labels, labelHeadless)
	if svc.Spec.ClusterIP == v1.ClusterIPNone {
		labels[labelHeadless] = ""
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = ManagedBy
	return labels
}

func ownerReference(svc *v1.Service) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}
}

// ownedBy reports whether the slice's controller is the Service with this UID.
func ownedBy(s *discoveryv1.EndpointSlice, uid types.UID) bool {
	ref := metav1.GetControllerOf(s)
	return ref == nil || ref.UID == uid
}

func metadataMatches(s *discoveryv1.EndpointSlice, labels map[string]string, owner metav1.OwnerReference) bool {
	return maps.Equal(s.Labels, labels) && len(s.OwnerReferences) == 1 &&
		apiequality.Semantic.DeepEqual(s.OwnerReferences[0], owner)
}
