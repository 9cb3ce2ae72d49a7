package gc

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// eventually polls cond in real time: informers on the fake client deliver events
// from their own goroutines.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunCollectsThroughInformers runs the whole collector on the fake client: discovery,
// informers, workers.
func TestRunCollectsThroughInformers(t *testing.T) {
	owner := nodeObj("owner")
	dep := lease("ns", "dep", ownerRef(nodeObj("gone"), false))
	kept := lease("ns", "kept", ownerRef(owner, false))
	h := newHarness(t)
	for _, o := range []*unstructured.Unstructured{owner, dep, kept} {
		if err := h.client.Tracker().Add(partial(o)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.ctrl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	eventually(t, "the dependent of an absent owner to be deleted", func() bool { return h.get(dep) == nil })
	if h.get(kept) == nil {
		t.Error("the dependent of an existing owner was deleted")
	}
	if n := h.ctrl.monitors.count(); n != 2 {
		t.Errorf("watching %d resources, want 2 (leases, nodes; events ignored)", n)
	}
}

func TestMonitorsFollowDiscovery(t *testing.T) {
	h := newHarness(t)
	if err := h.client.Tracker().Add(partial(lease("ns", "l"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() {
		cancel()
		h.ctrl.monitors.stop()
	}()
	m := h.ctrl.monitors
	if changed, err := m.sync(ctx, map[schema.GroupVersionResource]string{leases: "Lease"}, true); !changed || err != nil {
		t.Fatalf("sync: changed %v, %v; want a started informer", changed, err)
	}
	eventually(t, "the lease informer to fill the graph", func() bool { return m.synced() && h.ctrl.graph.size() == 1 })

	// A partial discovery does not stop what it failed to list.
	if changed, _ := m.sync(ctx, nil, false); changed || m.count() != 1 {
		t.Fatalf("partial discovery: changed %v, %d informers; want no change", changed, m.count())
	}
	if changed, _ := m.sync(ctx, nil, true); !changed || m.count() != 0 || h.ctrl.graph.size() != 0 {
		t.Fatalf("complete discovery without leases: changed %v, %d informers, graph %d; want all gone", changed, m.count(), h.ctrl.graph.size())
	}
}
