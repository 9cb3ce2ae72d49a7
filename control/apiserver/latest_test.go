package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/storage"
)

// A cached object answers a read at resourceVersion=0 only while the tracker is live
// and says the cached revision is the key's latest.
func TestCurrentServesOnlyTheLatestKnownRevision(t *testing.T) {
	objects, err := newObjectCache(1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{objects: objects}
	const key = "/v1/nodes/a"
	s.objects.put(key, 5, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "5"}}, 100)

	if _, ok := s.current(key); ok {
		t.Fatal("served from memory before the tracker had a snapshot")
	}
	s.latest.reset(map[string]int64{key: 5})
	got, ok := s.current(key)
	if !ok || got.(*corev1.Node).ResourceVersion != "5" {
		t.Fatalf("current = %v, %v; want the cached revision 5", got, ok)
	}

	s.latest.apply(storage.Event{Type: storage.EventPut, KV: storage.KV{Key: key}, Revision: 7})
	if _, ok := s.current(key); ok {
		t.Fatal("served revision 5 after the watch reported revision 7")
	}
	s.objects.put(key, 7, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}}, 100)
	if got, ok := s.current(key); !ok || got.(*corev1.Node).ResourceVersion != "7" {
		t.Fatalf("current = %v, %v; want revision 7 once cached", got, ok)
	}

	s.latest.apply(storage.Event{Type: storage.EventDelete, KV: storage.KV{Key: key}, Revision: 8})
	if _, ok := s.current(key); ok {
		t.Fatal("served a deleted object")
	}
	s.latest.apply(storage.Event{Type: storage.EventPut, KV: storage.KV{Key: key}, Revision: 9})
	s.latest.stop()
	s.latest.apply(storage.Event{Type: storage.EventPut, KV: storage.KV{Key: key}, Revision: 7})
	if _, ok := s.current(key); ok {
		t.Fatal("served from memory while the tracker was stopped")
	}
}
