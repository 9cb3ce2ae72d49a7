package gc

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// node is what the collector remembers of one object: its identity, its owners and
// whether it is being deleted with one of the finalizers the collector acts on.
type node struct {
	// resource is the resource the object was observed through, used to read and
	// write it.
	resource   schema.GroupVersionResource
	apiVersion string
	kind       string
	namespace  string
	name       string
	uid        types.UID
	owners     []metav1.OwnerReference
	deleting   bool // metadata.deletionTimestamp is set
	orphan     bool // the orphan finalizer is present
	foreground bool // the foregroundDeletion finalizer is present
}

// nodeFrom reads the fields the collector needs from an object's metadata.
func nodeFrom(gvr schema.GroupVersionResource, obj metav1.Object, apiVersion, kind string) *node {
	n := &node{
		resource:   gvr,
		apiVersion: apiVersion,
		kind:       kind,
		namespace:  obj.GetNamespace(),
		name:       obj.GetName(),
		uid:        obj.GetUID(),
		owners:     obj.GetOwnerReferences(),
		deleting:   obj.GetDeletionTimestamp() != nil,
	}
	for _, f := range obj.GetFinalizers() {
		switch f {
		case metav1.FinalizerOrphanDependents:
			n.orphan = true
		case metav1.FinalizerDeleteDependents:
			n.foreground = true
		}
	}
	return n
}

// nodeFromObject is nodeFrom for anything with metadata observed through gvr, whose
// objects are of kind.
func nodeFromObject(gvr schema.GroupVersionResource, kind string, obj any) (*node, bool) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return nodeFrom(gvr, acc, gvr.GroupVersion().String(), kind), true
}

// typed is obj's metadata as an object of n's kind, as events name their object.
func (n *node) typed(obj *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := obj.DeepCopy()
	out.APIVersion, out.Kind = n.apiVersion, n.kind
	return out
}

// waitingForDependents reports whether the object is in Foreground deletion.
func (n *node) waitingForDependents() bool { return n.deleting && n.foreground }

// ownerRef returns the reference to owner among n's owners.
func (n *node) ownerRef(owner types.UID) (metav1.OwnerReference, bool) {
	for _, r := range n.owners {
		if r.UID == owner {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}

// blocks reports whether n holds back the Foreground deletion of owner.
func (n *node) blocks(owner types.UID) bool {
	r, ok := n.ownerRef(owner)
	return ok && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}

// describe names the object in logs and errors.
func (n *node) describe() string {
	if n.namespace == "" {
		return n.resource.GroupResource().String() + " " + n.name
	}
	return n.resource.GroupResource().String() + " " + n.namespace + "/" + n.name
}

// sameOwnership reports whether a and b would lead to the same collector decisions.
func sameOwnership(a, b *node) bool {
	return a.deleting == b.deleting && a.orphan == b.orphan && a.foreground == b.foreground &&
		slices.EqualFunc(a.owners, b.owners, func(x, y metav1.OwnerReference) bool {
			return x.UID == y.UID && x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name &&
				boolValue(x.BlockOwnerDeletion) == boolValue(y.BlockOwnerDeletion)
		})
}

func boolValue(b *bool) bool { return b != nil && *b }

// graph holds the observed objects by UID and, for every UID named as an owner, the
// UIDs of the objects naming it. An owner need not be in the graph itself: its
// resource may not be watched, or it may be gone.
type graph struct {
	mu         sync.RWMutex
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]struct{}
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, dependents: map[types.UID]map[types.UID]struct{}{}}
}

// observe records n, replacing what was known of its UID, and returns the previous
// record (nil for a new object).
func (g *graph) observe(n *node) *node {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[n.uid]
	if old != nil {
		g.unindex(old)
	}
	g.nodes[n.uid] = n
	for _, r := range n.owners {
		deps := g.dependents[r.UID]
		if deps == nil {
			deps = map[types.UID]struct{}{}
			g.dependents[r.UID] = deps
		}
		deps[n.uid] = struct{}{}
	}
	return old
}

// forget removes uid and returns what was known of it (nil if nothing).
func (g *graph) forget(uid types.UID) *node {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[uid]
	if old != nil {
		g.unindex(old)
		delete(g.nodes, uid)
	}
	return old
}

// forgetResource removes every object observed through gvr, when the collector stops
// watching it, and returns their UIDs.
func (g *graph) forgetResource(gvr schema.GroupVersionResource) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []types.UID
	for uid, n := range g.nodes {
		if n.resource == gvr {
			g.unindex(n)
			delete(g.nodes, uid)
			out = append(out, uid)
		}
	}
	return out
}

// unindex removes n from its owners' dependent sets; g.mu is held.
func (g *graph) unindex(n *node) {
	for _, r := range n.owners {
		deps := g.dependents[r.UID]
		delete(deps, n.uid)
		if len(deps) == 0 {
			delete(g.dependents, r.UID)
		}
	}
}

// get returns the record of uid. Records are replaced, never changed in place, so the
// caller may read it without the lock.
func (g *graph) get(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// dependentsOf returns the observed objects that name owner in their ownerReferences.
func (g *graph) dependentsOf(owner types.UID) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	deps := g.dependents[owner]
	out := make([]*node, 0, len(deps))
	for uid := range deps {
		if n, ok := g.nodes[uid]; ok {
			out = append(out, n)
		}
	}
	return out
}

// hasDependents reports whether any observed object names owner.
func (g *graph) hasDependents(owner types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.dependents[owner]) > 0
}

// size is the number of observed objects.
func (g *graph) size() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// toCheck returns the UIDs whose collector decisions may have changed when an object
// went from old to new (either may be nil: added, deleted). It is where the
// collector's level triggering starts; every UID returned is decided again from live
// reads, so returning too many costs only work.
func (g *graph) toCheck(old, new *node) []types.UID {
	var out []types.UID
	switch {
	case new == nil && old != nil:
		// Its dependents may have lost their last owner; its owners may be waiting for
		// it to go (Foreground).
		for _, d := range g.dependentsOf(old.uid) {
			out = append(out, d.uid)
		}
		for _, r := range old.owners {
			if old.blocks(r.UID) {
				out = append(out, r.UID)
			}
		}
	case new != nil && (old == nil || !sameOwnership(old, new)):
		if len(new.owners) > 0 || (new.deleting && (new.orphan || new.foreground)) {
			out = append(out, new.uid)
		}
		if old != nil {
			// An owner it no longer names, or no longer blocks, may now finish its
			// Foreground deletion.
			for _, r := range old.owners {
				if old.blocks(r.UID) && !new.blocks(r.UID) {
					out = append(out, r.UID)
				}
			}
		}
	}
	return out
}
