package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// collectableResources asks discovery for the preferred version of every resource
// that can be listed, watched and deleted, minus ignored ones and subresources, with
// the kind of each. complete is false when some group failed discovery: the result is
// then partial, and resources missing from it must not be taken as gone.
func collectableResources(disc discovery.DiscoveryInterface, ignored map[schema.GroupResource]bool) (map[schema.GroupVersionResource]string, bool, error) {
	lists, err := discovery.ServerPreferredResources(disc)
	complete := err == nil
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, false, fmt.Errorf("gc: discovering resources: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}, lists)
	out := map[schema.GroupVersionResource]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, false, fmt.Errorf("gc: discovery lists group version %q: %w", l.GroupVersion, err)
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || ignored[gvr.GroupResource()] {
				continue
			}
			out[gvr] = r.Kind
		}
	}
	return out, complete, nil
}

// monitor is one running informer.
type monitor struct {
	synced cache.InformerSynced
	cancel context.CancelFunc
	done   chan struct{}
}

// monitors runs one metadata informer per watched resource and turns their events
// into graph changes and work items. It owns the informers' goroutines.
type monitors struct {
	client  metadata.Interface
	graph   *graph
	enqueue func(uids ...types.UID)
	logger  *slog.Logger

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

func newMonitors(client metadata.Interface, g *graph, enqueue func(...types.UID), logger *slog.Logger) *monitors {
	return &monitors{client: client, graph: g, enqueue: enqueue, logger: logger, running: map[schema.GroupVersionResource]*monitor{}}
}

// sync starts informers for resources in want (by resource, the kind it serves) that
// have none, and, when removeMissing, stops those for resources no longer in want
// (forgetting their objects). ctx bounds the started informers. It reports whether
// anything changed.
func (m *monitors) sync(ctx context.Context, want map[schema.GroupVersionResource]string, removeMissing bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	var errs []error
	for _, gvr := range slices.SortedFunc(maps.Keys(want), compareGVR) {
		if m.running[gvr] != nil {
			continue
		}
		mon, err := m.start(ctx, gvr, want[gvr])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.running[gvr] = mon
		changed = true
		m.logger.Info("watching resource", "resource", resourceName(gvr))
	}
	if removeMissing {
		for gvr, mon := range m.running {
			if _, ok := want[gvr]; ok {
				continue
			}
			mon.cancel()
			<-mon.done
			delete(m.running, gvr)
			m.graph.forgetResource(gvr)
			changed = true
			m.logger.Info("stopped watching resource", "resource", resourceName(gvr))
		}
	}
	return changed, errors.Join(errs...)
}

func compareGVR(a, b schema.GroupVersionResource) int {
	return strings.Compare(resourceName(a), resourceName(b))
}

// resourceName spells gvr as kubectl does: pods.v1, leases.v1.coordination.k8s.io.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}

// start runs an informer over the metadata of gvr's objects, which are of kind. The
// metadata client's objects are PartialObjectMetadata: the kind each node is known by
// (matched against owner references) comes from discovery.
func (m *monitors) start(ctx context.Context, gvr schema.GroupVersionResource, kind string) (*monitor, error) {
	inf := metadatainformer.NewFilteredMetadataInformer(m.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(keepMetadata); err != nil {
		return nil, fmt.Errorf("gc: informer for %s: %w", resourceName(gvr), err)
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(gvr, kind, obj) },
		UpdateFunc: func(_, obj any) { m.observe(gvr, kind, obj) },
		DeleteFunc: func(obj any) { m.deleted(gvr, kind, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("gc: informer for %s: %w", resourceName(gvr), err)
	}
	mctx, cancel := context.WithCancel(ctx)
	mon := &monitor{synced: reg.HasSynced, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(mon.done)
		inf.RunWithContext(mctx)
	}()
	return mon, nil
}

// keepMetadata strips cached objects down to what the collector reads (labels,
// annotations and managed fields go), so watching every resource costs little memory.
func keepMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil // DeletedFinalStateUnknown and the like pass through
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace:         m.Namespace,
		Name:              m.Name,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		OwnerReferences:   m.OwnerReferences,
		Finalizers:        m.Finalizers,
		DeletionTimestamp: m.DeletionTimestamp,
	}}, nil
}

func (m *monitors) observe(gvr schema.GroupVersionResource, kind string, obj any) {
	n, ok := nodeFromObject(gvr, kind, obj)
	if !ok {
		m.logger.Warn("informer delivered an object without metadata", "resource", resourceName(gvr), "type", fmt.Sprintf("%T", obj))
		return
	}
	old := m.graph.observe(n)
	m.enqueue(m.graph.toCheck(old, n)...)
}

func (m *monitors) deleted(gvr schema.GroupVersionResource, kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := nodeFromObject(gvr, kind, obj)
	if !ok {
		return
	}
	old := m.graph.forget(n.uid)
	if old == nil {
		old = n
	}
	m.enqueue(m.graph.toCheck(old, nil)...)
}

// synced reports whether every informer has delivered its first list.
func (m *monitors) synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mon := range m.running {
		if !mon.synced() {
			return false
		}
	}
	return true
}

// count is the number of watched resources.
func (m *monitors) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// stop stops every informer and waits for them.
func (m *monitors) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		mon.cancel()
		<-mon.done
		delete(m.running, gvr)
	}
}
