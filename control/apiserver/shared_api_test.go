package apiserver_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestConcurrentReadsOfOneCachedObject: gets (plain and at resourceVersion=0), lists,
// Tables, metadata (PartialObjectMetadata) and watch events hand out the object cache's own objects without copying
// them, so reads in every format at once must neither change them nor see each
// other's changes. Run with -race (make test does for this package), where a write to
// a shared object anywhere on these paths fails the test.
func TestConcurrentReadsOfOneCachedObject(t *testing.T) {
	proto, js, _, _, _ := twoClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, err := js.CoreV1().Nodes().Create(ctx, readyNode("shared"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Fill the cache, and let the latest-revision tracker see the Node.
	waitFor(ctx, t, "the Node readable at resourceVersion=0", func() (bool, string) {
		_, err := js.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{ResourceVersion: "0"})
		return err == nil, "not yet"
	})

	var watchers sync.WaitGroup
	modified := make(chan error, 2)
	for _, c := range []struct {
		name   string
		client interface {
			Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
		}
	}{{"protobuf", proto.CoreV1().Nodes()}, {"json", js.CoreV1().Nodes()}} {
		w, err := c.client.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		watchers.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Modified {
					modified <- nil
					return
				}
			}
		})
	}

	var readers sync.WaitGroup
	errs := make(chan error, 64)
	for range 4 {
		readers.Go(func() {
			for range 20 {
				for _, read := range []func() (any, error){
					func() (any, error) { return proto.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{}) },
					func() (any, error) { return js.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{}) },
					func() (any, error) {
						return proto.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{ResourceVersion: "0"})
					},
					func() (any, error) { return proto.CoreV1().Nodes().List(ctx, metav1.ListOptions{}) },
					func() (any, error) { return js.CoreV1().Nodes().List(ctx, metav1.ListOptions{}) },
					func() (any, error) {
						return js.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/shared").
							SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
							Param("includeObject", "Object").DoRaw(ctx)
					},
					// What the garbage collector's metadata client asks for.
					func() (any, error) {
						return js.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/shared").
							SetHeader("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").DoRaw(ctx)
					},
					func() (any, error) {
						return js.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes").
							SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").DoRaw(ctx)
					},
				} {
					if _, err := read(); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	// One write while the reads run, which every watcher must see.
	got, err := js.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Labels = map[string]string{"written": "during-the-reads"}
	if _, err := js.CoreV1().Nodes().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent read failed: %v", err)
	}
	for range 2 {
		select {
		case <-modified:
		case <-ctx.Done():
			t.Fatal("a watcher did not see the update")
		}
	}
	watchers.Wait()

	a, err := proto.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := js.CoreV1().Nodes().Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Labels["written"] != "during-the-reads" || !reflect.DeepEqual(a, b) {
		t.Fatalf("after the reads, protobuf and JSON gets differ or lack the write:\n%+v\n%+v", a, b)
	}
}
