package plinthd

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
)

func apiEvictions(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" && a.GetSubresource() == "eviction" {
			n++
		}
	}
	return n
}

func evictorFixture(t *testing.T, withRuntime bool) (podEvictor, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{NodeName: "n1"}})
	client := nodeclienttest.FromClientset(cs)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := podEvictor{api: pressuresignals.NewAPIPods(client, "n1", nil, nil, logger)}
	if withRuntime {
		e.rt = newPodRuntime(config.Defaults(), client, "n1", nil, logger)
	}
	return e, cs
}

// With the pod runtime on, a pod bound to the node that the runtime does not run (not
// started yet: the window in which an e2e test once saw its pod deleted through the
// API) is not evicted at all: an error for the manager to retry on a fresh list, no
// Eviction through the API, no record in the runtime, and nothing listed to choose.
func TestPodEvictorWithTheRuntimeNeverEvictsAPodItDoesNotRunThroughTheAPI(t *testing.T) {
	e, cs := evictorFixture(t, true)
	pod := pressure.Pod{Namespace: "default", Name: "web", UID: "u1"}
	if err := e.Evict(context.Background(), pod, "The node was low on resource: memory.", pressure.HardEvictionGracePeriod); err == nil {
		t.Error("Evict of a pod the runtime does not run succeeded")
	}
	if n := apiEvictions(cs); n != 0 {
		t.Errorf("%d evictions through the API, want none; actions %v", n, cs.Actions())
	}
	if _, ours := e.rt.evictedGone(pod.UID); ours {
		t.Error("the runtime claims a pod it never ran")
	}
	if got := e.rt.withoutEvicted([]*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}}); len(got) != 1 {
		t.Errorf("a pod the runtime did not evict is left out of syncs: %v", got)
	}
	if got := e.rt.runningPods(); len(got) != 0 {
		t.Errorf("a runtime not built yet lists running pods %v", got)
	}
}

// A plinthd without the pod runtime evicts through the API.
func TestPodEvictorWithoutTheRuntimeEvictsThroughTheAPI(t *testing.T) {
	e, cs := evictorFixture(t, false)
	pod := pressure.Pod{Namespace: "default", Name: "web", UID: "u1"}
	if err := e.Evict(context.Background(), pod, "The node was low on resource: memory.", pressure.HardEvictionGracePeriod); err != nil {
		t.Fatal(err)
	}
	if n := apiEvictions(cs); n != 1 {
		t.Errorf("%d evictions through the API, want 1; actions %v", n, cs.Actions())
	}
}

// A pod whose containers have all ended keeps its worker, but it is no candidate for
// eviction: it holds nothing, and evicting it would turn a Succeeded pod Failed.
func TestFinishedPodsAreNoEvictionCandidates(t *testing.T) {
	w := newPodStatusWriter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	}
	done, failed, running, unreported := pod("done"), pod("failed"), pod("running"), pod("unreported")
	w.report(done, corev1.PodStatus{Phase: corev1.PodSucceeded})
	w.report(failed, corev1.PodStatus{Phase: corev1.PodFailed})
	w.report(running, corev1.PodStatus{Phase: corev1.PodRunning})
	got := w.unfinished([]*corev1.Pod{done, failed, running, unreported})
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "running,unreported" {
		t.Errorf("candidates %v, want running and unreported", names)
	}
}
