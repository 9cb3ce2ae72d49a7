package proxy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Sources are the ListerWatchers the proxy builds its informers from. The wiring
// builds them (from a clientset or from lighter clients); the proxy never sees a
// client. Node must list and watch this node only (a metadata.name field selector).
type Sources struct {
	Services       cache.ListerWatcher
	EndpointSlices cache.ListerWatcher
	Node           cache.ListerWatcher
}

// informers are the three watches the proxy runs.
type informers struct {
	services, slices, node cache.SharedIndexInformer
	// registrations are the proxy's handlers; each has synced once it was handed
	// every object of the informer's initial list.
	registrations []cache.ResourceEventHandlerRegistration
}

// newInformers builds the informers without resync: every change arrives as an event,
// and the sync loop resyncs the rules on its own schedule.
func newInformers(s Sources) *informers {
	return &informers{
		services: cache.NewSharedIndexInformer(s.Services, &corev1.Service{}, 0, cache.Indexers{}),
		slices:   cache.NewSharedIndexInformer(s.EndpointSlices, &discoveryv1.EndpointSlice{}, 0, cache.Indexers{}),
		node:     cache.NewSharedIndexInformer(s.Node, &corev1.Node{}, 0, cache.Indexers{}),
	}
}

// hasSynced reports whether the proxy's handlers saw every object of the initial
// lists (the stores being filled is not enough: handlers run after).
func (i *informers) hasSynced() bool {
	if len(i.registrations) != 3 {
		return false
	}
	for _, r := range i.registrations {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// addHandlers connects the informers to the proxy's event methods.
func (i *informers) addHandlers(p *Proxy) error {
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		on       func(obj any, deleted bool)
	}{{i.services, p.onService}, {i.slices, p.onSlice}, {i.node, p.onNode}} {
		on := h.on
		reg, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(obj, false) },
			UpdateFunc: func(_, obj any) { on(obj, false) },
			DeleteFunc: func(obj any) { on(obj, true) },
		})
		if err != nil {
			return err
		}
		i.registrations = append(i.registrations, reg)
	}
	return nil
}

// unwrapTombstone returns the object inside a DeletedFinalStateUnknown (a delete the
// watch missed and a relist found).
func unwrapTombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// triggerTime reads the endpoints.kubernetes.io/last-change-trigger-time annotation:
// when the change that produced this slice version happened (zero if absent).
func triggerTime(s *discoveryv1.EndpointSlice) time.Time {
	v, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}
