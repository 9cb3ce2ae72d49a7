package apiserver

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth/plinth/control/storage"
)

func cacheLeases() *Resource {
	return &Resource{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, Plural: "leases", Kind: "Lease",
		Namespaced: true, New: func() runtime.Object { return &coordinationv1.Lease{} }}
}

func lease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
}

func TestObjectCacheServesOnlyTheExactRevision(t *testing.T) {
	c, err := newObjectCache(1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.put("/l/a", 5, lease("a", "one"), 100)
	if _, ok := c.get("/l/a", 4); ok {
		t.Error("revision 4 served from an entry of revision 5")
	}
	got, ok := c.get("/l/a", 5)
	if !ok || *got.(*coordinationv1.Lease).Spec.HolderIdentity != "one" {
		t.Fatalf("revision 5: got %v, %v", got, ok)
	}
	// A copy: changing what was served does not change the cache.
	*got.(*coordinationv1.Lease).Spec.HolderIdentity = "changed"
	again, _ := c.get("/l/a", 5)
	if h := *again.(*coordinationv1.Lease).Spec.HolderIdentity; h != "one" {
		t.Errorf("the cached object was changed through a served copy: holder %q", h)
	}
	// A slow reader's older revision does not replace a newer one.
	c.put("/l/a", 7, lease("a", "seven"), 100)
	c.put("/l/a", 6, lease("a", "six"), 100)
	if _, ok := c.get("/l/a", 7); !ok {
		t.Error("revision 7 was replaced by the older revision 6")
	}
	c.forget("/l/a")
	if _, ok := c.get("/l/a", 7); ok {
		t.Error("a forgotten key is still served")
	}
	if c.bytes != 0 {
		t.Errorf("accounted bytes after forgetting everything: %d, want 0", c.bytes)
	}
}

func TestObjectCacheStaysWithinItsBound(t *testing.T) {
	c, err := newObjectCache(8000, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		c.put(string(rune('a'+i%26))+string(rune('a'+i/26)), int64(i+1), lease("x", "y"), 300)
		if c.bytes > c.limit {
			t.Fatalf("after %d puts the cache holds %d bytes, over its limit %d", i+1, c.bytes, c.limit)
		}
	}
	if len(c.entries) == 0 {
		t.Error("the cache evicted everything")
	}
	// An object larger than an eighth of the bound is not cached at all.
	c.put("big", 1, lease("big", "y"), 2000)
	if _, ok := c.get("big", 1); ok {
		t.Error("an object of a quarter of the bound was cached")
	}
	off, _ := newObjectCache(0, nil)
	off.put("k", 1, lease("k", "y"), 10)
	if _, ok := off.get("k", 1); ok {
		t.Error("a cache with limit 0 served an object")
	}
}

// TestCachedObjectEqualsDecodedObject: what a write leaves in the cache must be exactly
// what decoding the stored bytes gives, or reads through the cache would see values
// etcd does not hold. The JSON round trip is lossy (a MicroTime keeps microseconds, a
// Time whole seconds), so caching the object in hand would fail this.
func TestCachedObjectEqualsDecodedObject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	store := storage.New(etcd.Client, "/registry")
	r := cacheLeases()
	reg, err := NewRegistry(r)
	if err != nil {
		t.Fatal(err)
	}
	metrics := prometheus.NewRegistry()
	s, err := New(Config{Store: store, Registry: reg, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	in := lease("a", "node-a")
	now := time.Date(2026, 11, 26, 13, 0, 0, 123456789, time.UTC)
	in.CreationTimestamp = metav1.NewTime(now)
	in.Spec.RenewTime = &metav1.MicroTime{Time: now}
	rev, err := s.store(ctx, r, in, in)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := store.Get(ctx, r.key("ns", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if kv.Revision != rev {
		t.Fatalf("stored at revision %d, create reported %d", kv.Revision, rev)
	}
	decoded, err := fromStorage(r, kv)
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := s.objects.get(kv.Key, kv.Revision)
	if !ok {
		t.Fatal("the create left nothing in the cache")
	}
	if !reflect.DeepEqual(cached, decoded) {
		a, _ := json.Marshal(cached)
		b, _ := json.Marshal(decoded)
		t.Errorf("cached object differs from the stored one:\ncached:  %s\ndecoded: %s\n(renewTime in hand %s)", a, b, now)
	}
	if hits := testutil.ToFloat64(s.objects.lookups.WithLabelValues("hit")); hits != 1 {
		t.Errorf("cache hits %v, want 1", hits)
	}
}
