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
}

// newInformers builds the informers without resync: every change arrives as an event,
// and the sync loop resyncs the rules on its own schedule.
func newInformers(s Sources) informers {
	return informers{
		services: cache.NewSharedIndexInformer(s.Services, &corev1.Service{}, 0, cache.Indexers{}),
		slices:   cache.NewSharedIndexInformer(s.EndpointSlices, &discoveryv1.EndpointSlice{}, 0, cache.Indexers{}),
		node:     cache.NewSharedIndexInformer(s.Node, &corev1.Node{}, 0, cache.Indexers{}),
	}
}

func (i informers) hasSynced() bool {
	return i.services.HasSynced() && i.slices.HasSynced() && i.node.HasSynced()
}

// handlers connects the informers to the proxy's event methods.
func (i informers) addHandlers(p *Proxy) error {
	if _, err := i.services.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onService(obj, false) },
		UpdateFunc: func(_, obj any) { p.onService(obj, false) },
		DeleteFunc: func(obj any) { p.onService(obj, true) },
	}); err != nil {
		return err
	}
	if _, err := i.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onSlice(obj, false) },
		UpdateFunc: func(_, obj any) { p.onSlice(obj, false) },
		DeleteFunc: func(obj any) { p.onSlice(obj, true) },
	}); err != nil {
		return err
	}
	_, err := i.node.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onNode(obj, false) },
		UpdateFunc: func(_, obj any) { p.onNode(obj, false) },
		DeleteFunc: func(obj any) { p.onNode(obj, true) },
	})
	return err
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
