package apiserver

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth/plinth/control/storage"
)

// DefaultObjectCacheBytes bounds the decoded-object cache by the stored (JSON) size of
// what it holds; decoded objects take about three times that in memory.
const DefaultObjectCacheBytes = 32 << 20

// objectCache keeps the latest decoded form of stored objects, keyed by storage key and
// valid for exactly one etcd mod revision. A key's mod revision changes with every write
// to it, so a hit is byte-for-byte what decoding the stored value would give; nothing
// is ever served that etcd has not confirmed at that revision.
//
// Why: at 5,000 nodes the hot paths decode the same few objects over and over. Every
// Lease renewal read its Lease back from etcd and decoded it before writing the new one,
// every watcher of Leases decoded each renewal again, and every Node read decoded the
// Node. JSON decoding was the largest single cost in the control service's profile.
// With the cache a renewal whose resourceVersion is the cached revision writes with a
// compare-and-swap on that revision without reading first (etcd still refuses it if
// anything changed), and reads and watch events at a cached revision copy instead of
// decoding.
//
// Entries are immutable: callers get deep copies. The bound is approximate: when the
// stored sizes of the entries pass it, arbitrary entries go until it is under 7/8 of it.
type objectCache struct {
	limit int64

	mu      sync.Mutex
	entries map[string]cachedObject
	bytes   int64

	lookups *prometheus.CounterVec // by result: hit, miss
}

type cachedObject struct {
	revision int64
	obj      runtime.Object
	size     int64
}

// newObjectCache returns a cache of at most limit stored bytes; limit 0 caches nothing.
func newObjectCache(limit int64, reg prometheus.Registerer) (*objectCache, error) {
	c := &objectCache{
		limit:   limit,
		entries: make(map[string]cachedObject),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_apiserver_object_cache_lookups_total",
			Help: "Lookups of decoded stored objects by key and revision, by result (hit or miss).",
		}, []string{"result"}),
	}
	if reg != nil {
		if err := reg.Register(c.lookups); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// get returns a copy of the object cached for key at exactly revision.
func (c *objectCache) get(key string, revision int64) (runtime.Object, bool) {
	obj, ok := c.view(key, revision)
	if !ok {
		return nil, false
	}
	return obj.DeepCopyObject(), true
}

// view returns the object cached for key at exactly revision itself, not a copy: the
// caller must not change it in any way (stampKind instead of setting the kind). Reads
// that only encode what they return use it, saving a deep copy per object served.
func (c *objectCache) view(key string, revision int64) (runtime.Object, bool) {
	if c.limit <= 0 {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || e.revision != revision {
		c.lookups.WithLabelValues("miss").Inc()
		return nil, false
	}
	c.lookups.WithLabelValues("hit").Inc()
	return e.obj, true
}

// put records obj as key's decoded value at revision. The cache keeps obj itself: the
// caller must not change it afterwards. An older revision never replaces a newer one
// (a slow reader racing a writer).
func (c *objectCache) put(key string, revision int64, obj runtime.Object, size int) {
	if c.limit <= 0 || int64(size) > c.limit/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		if old.revision >= revision {
			return
		}
		c.bytes -= old.size
	}
	c.entries[key] = cachedObject{revision: revision, obj: obj, size: int64(size)}
	c.bytes += int64(size)
	if c.bytes > c.limit {
		target := c.limit - c.limit/8
		for k, e := range c.entries {
			if c.bytes <= target {
				break
			}
			delete(c.entries, k)
			c.bytes -= e.size
		}
	}
}

// forget drops key (deleted).
func (c *objectCache) forget(key string) {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		delete(c.entries, key)
		c.bytes -= e.size
	}
}

// decode returns the object stored in kv: a copy of the cached one when the cache holds
// kv's key at kv's revision, else a fresh decode, which is then cached.
func (s *Server) decode(r *Resource, kv storage.KV) (runtime.Object, error) {
	if obj, ok := s.objects.get(kv.Key, kv.Revision); ok {
		return obj, nil
	}
	obj, err := fromStorage(r, kv)
	if err != nil {
		return nil, err
	}
	s.objects.put(kv.Key, kv.Revision, obj.DeepCopyObject(), len(kv.Value))
	return obj, nil
}

// decodeShared is decode for callers that only read and encode the object: a hit is
// the cached object itself (see objectCache.view), and a miss caches the fresh decode
// without copying it.
func (s *Server) decodeShared(r *Resource, kv storage.KV) (runtime.Object, error) {
	if obj, ok := s.objects.view(kv.Key, kv.Revision); ok {
		return obj, nil
	}
	obj, err := fromStorage(r, kv)
	if err != nil {
		return nil, err
	}
	s.objects.put(kv.Key, kv.Revision, obj, len(kv.Value))
	return obj, nil
}

// decodeListed is decodeShared for lists: it uses the cache but does not fill it, so
// one large list does not push out the objects that are read and written all the time.
// What it returns may be shared: read and encode it only.
func (s *Server) decodeListed(r *Resource, kv storage.KV) (runtime.Object, error) {
	if obj, ok := s.objects.view(kv.Key, kv.Revision); ok {
		return obj, nil
	}
	return fromStorage(r, kv)
}

// remember caches what was just written at key: decoded from the stored bytes rather
// than the object in hand, because the JSON round trip is lossy (timestamps lose their
// sub-second part) and a hit must equal a decode.
func (s *Server) remember(r *Resource, key string, revision int64, data []byte) {
	if s.objects.limit <= 0 {
		return
	}
	obj, err := fromStorage(r, storage.KV{Key: key, Value: data, Revision: revision})
	if err != nil {
		// What was just encoded decodes; if not, the next read reports the corruption.
		s.cfg.Logger.Error("decoding a just-written object", "key", key, "err", err)
		return
	}
	s.objects.put(key, revision, obj, len(data))
}
