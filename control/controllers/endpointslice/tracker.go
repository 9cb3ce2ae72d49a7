package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deleted marks a slice this controller deleted in writeTracker.
const deleted int64 = -1

// writeTracker remembers, per Service, the generation of every slice this controller
// wrote (or that it deleted one), until the informer cache has caught up. A sync on a
// cache that has not seen the controller's own last writes would create duplicates or
// undo them, so it waits instead.
type writeTracker struct {
	mu      sync.Mutex
	written map[types.NamespacedName]map[types.UID]int64
}

func newWriteTracker() *writeTracker {
	return &writeTracker{written: map[types.NamespacedName]map[types.UID]int64{}}
}

// record notes a written slice's generation, or deleted.
func (t *writeTracker) record(svc types.NamespacedName, uid types.UID, generation int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svc]
	if m == nil {
		m = map[types.UID]int64{}
		t.written[svc] = m
	}
	m[uid] = generation
}

// stale reports whether the cached slices of svc miss one of this controller's writes:
// a slice it wrote at a generation the cache does not have yet, or one it deleted that
// the cache still holds. Writes the cache has caught up with are forgotten.
func (t *writeTracker) stale(svc types.NamespacedName, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.written[svc]
	if len(m) == 0 {
		return false
	}
	gens := make(map[types.UID]int64, len(cached))
	for _, s := range cached {
		gens[s.UID] = s.Generation
	}
	isStale := false
	for uid, want := range m {
		got, inCache := gens[uid]
		switch {
		case want == deleted && inCache, want != deleted && (!inCache || got < want):
			isStale = true
		default:
			delete(m, uid)
		}
	}
	if len(m) == 0 {
		delete(t.written, svc)
	}
	return isStale
}

// sliceGone forgets a slice the informer reports deleted: whoever deleted it, the cache
// no longer waits for it.
func (t *writeTracker) sliceGone(svc types.NamespacedName, uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.written[svc]; m != nil {
		delete(m, uid)
		if len(m) == 0 {
			delete(t.written, svc)
		}
	}
}

// forget drops everything about a Service that is gone.
func (t *writeTracker) forget(svc types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.written, svc)
}
