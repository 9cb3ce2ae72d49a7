package plinthd

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
)

// Before the runtime runs (or for a pod it does not run) eviction goes through the
// API, and the runtime keeps no record of the pod.
func TestPodEvictorFallsBackToTheAPIWhenTheRuntimeDoesNotRunThePod(t *testing.T) {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{NodeName: "n1"}})
	client := nodeclienttest.FromClientset(cs)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Defaults()
	rt := newPodRuntime(cfg, client, "n1", nil, logger)
	e := podEvictor{api: pressuresignals.NewAPIPods(client, "n1", nil, nil, logger), rt: rt}
	pod := pressure.Pod{Namespace: "default", Name: "web", UID: "u1"}
	if err := e.Evict(context.Background(), pod, "The node was low on resource: memory."); err != nil {
		t.Fatal(err)
	}
	evictions := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" && a.GetSubresource() == "eviction" {
			evictions++
		}
	}
	if evictions != 1 {
		t.Errorf("%d evictions through the API, want 1; actions %v", evictions, cs.Actions())
	}
	if _, ours := rt.evictedGone(pod.UID); ours {
		t.Error("the runtime claims a pod it never ran")
	}
	if got := rt.withoutEvicted([]*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}}); len(got) != 1 {
		t.Errorf("a pod the runtime did not evict is left out of syncs: %v", got)
	}
}
