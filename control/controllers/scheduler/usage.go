package scheduler

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// placedPod is one pod's claim on a node.
type placedPod struct {
	uid    types.UID
	node   string
	demand podDemand
}

// usageBook keeps what the pods on each node take from it, from the pod cache, plus the
// pods this scheduler has bound but the cache does not show bound yet ("assumed"), so
// two pods scheduled back to back never both count on the same free room.
type usageBook struct {
	mu      sync.Mutex
	bound   map[types.NamespacedName]placedPod
	assumed map[types.NamespacedName]placedPod
	byNode  map[string]*nodeUsage
}

func newUsageBook() *usageBook {
	return &usageBook{
		bound:   map[types.NamespacedName]placedPod{},
		assumed: map[types.NamespacedName]placedPod{},
		byNode:  map[string]*nodeUsage{},
	}
}

func keyOf(pod *v1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// occupiesNode: a pod bound to a node takes room there until it has finished.
func occupiesNode(pod *v1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// observe takes a pod from the cache (added or updated); gone is true for deletions.
func (b *usageBook) observe(pod *v1.Pod, gone bool) {
	key := keyOf(pod)
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.bound[key]; ok {
		b.changeLocked(old.node, old.demand, -1)
		delete(b.bound, key)
	}
	// The cache showing the pod bound, or gone, ends the assumption.
	if a, ok := b.assumed[key]; ok && (gone || pod.Spec.NodeName != "" || pod.UID != a.uid) {
		b.changeLocked(a.node, a.demand, -1)
		delete(b.assumed, key)
	}
	if gone || !occupiesNode(pod) {
		return
	}
	p := placedPod{uid: pod.UID, node: pod.Spec.NodeName, demand: demandOf(pod)}
	b.bound[key] = p
	b.changeLocked(p.node, p.demand, 1)
}

// assume counts a pod on a node before the binding is written.
func (b *usageBook) assume(pod *v1.Pod, node string) {
	key := keyOf(pod)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.bound[key]; ok {
		return
	}
	if old, ok := b.assumed[key]; ok {
		b.changeLocked(old.node, old.demand, -1)
	}
	p := placedPod{uid: pod.UID, node: node, demand: demandOf(pod)}
	b.assumed[key] = p
	b.changeLocked(node, p.demand, 1)
}

// forget drops an assumption whose binding failed.
func (b *usageBook) forget(pod *v1.Pod) {
	key := keyOf(pod)
	b.mu.Lock()
	defer b.mu.Unlock()
	if a, ok := b.assumed[key]; ok {
		b.changeLocked(a.node, a.demand, -1)
		delete(b.assumed, key)
	}
}

// usage returns a copy of a node's usage.
func (b *usageBook) usage(node string) nodeUsage {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.byNode[node]
	if u == nil {
		return nodeUsage{requests: amounts{}}
	}
	return nodeUsage{requests: u.requests.clone(), scoringCPU: u.scoringCPU, scoringMemory: u.scoringMemory, pods: u.pods}
}

// changeLocked adds (sign 1) or removes (-1) a pod's demand on a node; a node without
// pods drops out of the book.
func (b *usageBook) changeLocked(node string, d podDemand, sign int64) {
	u := b.byNode[node]
	if u == nil {
		u = &nodeUsage{requests: amounts{}}
		b.byNode[node] = u
	}
	u.add(d, sign)
	if u.pods == 0 {
		delete(b.byNode, node)
	}
}

// isAssumed reports whether this pod (by UID) was bound here and the cache does not
// show it yet.
func (b *usageBook) isAssumed(key types.NamespacedName, uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.assumed[key]
	return ok && a.uid == uid
}
