package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// A watch and a list limited to one name read only that key, yet a name that is a
// prefix of others' (n1 of n10) still sees only its own object.
func TestNameSelectedWatchSeesOnlyItsObject(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	nodes := ts.client.CoreV1().Nodes()
	for _, name := range []string{"n1", "n10", "n2"} {
		if _, err := nodes.Create(ctx, readyNode(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "n1" {
		t.Fatalf("list of metadata.name=n1: %d items, want n1 only", len(list.Items))
	}
	w, err := nodes.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// n10 changes first: had it leaked through the key prefix, it would arrive first.
	for _, name := range []string{"n10", "n1"} {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["changed"] = "yes"
		if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var ev watch.Event
	select {
	case ev = <-w.ResultChan():
	case <-time.After(30 * time.Second):
		t.Fatal("no event for n1 within 30 s")
	}
	got, ok := ev.Object.(*corev1.Node)
	if !ok || ev.Type != "MODIFIED" || got.Name != "n1" {
		t.Fatalf("first event %s %T %v, want MODIFIED of n1", ev.Type, ev.Object, ev.Object)
	}
}
