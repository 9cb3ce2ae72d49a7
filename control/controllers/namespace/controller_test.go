package namespace

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	nodes  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func testDiscovery() *fakediscovery.FakeDiscovery {
	verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{
		Resources: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "namespaces", Kind: "Namespace", Verbs: verbs},
				{Name: "nodes", Kind: "Node", Verbs: verbs},
			}},
			{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
				{Name: "leases", Kind: "Lease", Namespaced: true, Verbs: verbs},
				{Name: "leases/status", Kind: "Lease", Namespaced: true, Verbs: metav1.Verbs{"get", "update"}},
			}},
		},
	}}
}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + namespace + "-" + name))
	return u
}

func lease(namespace, name string) *unstructured.Unstructured {
	return object("coordination.k8s.io/v1", "Lease", namespace, name)
}

// terminating is a namespace after its DELETE, with the given spec.finalizers.
func terminating(name string, spec ...string) *unstructured.Unstructured {
	ns := object("v1", "Namespace", "", name)
	ts := metav1.NewTime(t0)
	ns.SetDeletionTimestamp(&ts)
	_ = unstructured.SetNestedStringSlice(ns.Object, spec, "spec", "finalizers")
	_ = unstructured.SetNestedField(ns.Object, "Terminating", "status", "phase")
	return ns
}

type harness struct {
	t      *testing.T
	ctrl   *Controller
	client *dynamicfake.FakeDynamicClient
	disc   *fakediscovery.FakeDiscovery
	clock  *testingclock.FakeClock
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		namespaces: "NamespaceList", leases: "LeaseList", nodes: "NodeList",
	}, objs...)
	disc := testDiscovery()
	clk := testingclock.NewFakeClock(t0)
	ctrl, err := New(Config{Client: client, Discovery: disc, Clock: clk, Registerer: prometheus.NewRegistry(), Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.queue.ShutDown)
	return &harness{t: t, ctrl: ctrl, client: client, disc: disc, clock: clk}
}

func (h *harness) exists(gvr schema.GroupVersionResource, namespace, name string) bool {
	_, err := h.client.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

func (h *harness) namespaceDeletes() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource() == namespaces {
			n++
		}
	}
	return n
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestEmptiesThenReleasesNamespace(t *testing.T) {
	h := newHarness(t, terminating("doomed", "kubernetes"), lease("doomed", "a"), lease("doomed", "b"), lease("kept", "c"),
		object("v1", "Node", "", "n1"))

	if err := h.ctrl.reconcile(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	if h.exists(leases, "doomed", "a") || h.exists(leases, "doomed", "b") {
		t.Error("content of the terminating namespace is left")
	}
	if !h.exists(leases, "kept", "c") || !h.exists(nodes, "", "n1") {
		t.Error("objects outside the namespace were deleted")
	}
	// Released: the finalizer patch came before the namespace's second DELETE, which
	// the fake carries out at once.
	var verbs []string
	for _, a := range h.client.Actions() {
		if a.GetResource() == namespaces && (a.GetVerb() == "patch" || a.GetVerb() == "delete") {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if !slices.Equal(verbs, []string{"patch", "delete"}) {
		t.Errorf("namespace writes %v, want the finalizer patch, then the DELETE", verbs)
	}
	if h.exists(namespaces, "", "doomed") {
		t.Error("namespace still exists after release")
	}
	if n := counterValue(t, h.ctrl.metrics.deletions.WithLabelValues("leases.coordination.k8s.io")); n != 2 {
		t.Errorf("plinth_namespace_content_deletions_total{leases} = %v, want 2", n)
	}
	if n := counterValue(t, h.ctrl.metrics.finalized); n != 1 {
		t.Errorf("plinth_namespace_finalized_total = %v, want 1", n)
	}
}

func TestWaitsForContentThatTakesTime(t *testing.T) {
	slow := lease("doomed", "slow")
	ts := metav1.NewTime(t0)
	slow.SetDeletionTimestamp(&ts)
	slow.SetFinalizers([]string{"example.com/hold"})
	h := newHarness(t, terminating("doomed", "kubernetes"), slow)

	if err := h.ctrl.reconcile(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	ns, err := h.client.Resource(namespaces).Get(t.Context(), "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace released while content remains: %v", err)
	}
	if f := specFinalizers(ns); !slices.Equal(f, []string{"kubernetes"}) {
		t.Errorf("spec.finalizers %v while content remains, want [kubernetes]", f)
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("DELETE %v of an object already being deleted, or of the namespace", a)
		}
	}

	// It looks again after RecheckPeriod, not before.
	if h.ctrl.queue.Len() != 0 {
		t.Fatal("namespace requeued at once")
	}
	h.clock.Step(h.ctrl.opts.RecheckPeriod)
	deadline := time.Now().Add(10 * time.Second)
	for h.ctrl.queue.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("namespace not requeued after RecheckPeriod")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Once the slow object has gone, the next pass releases the namespace.
	if err := h.client.Tracker().Delete(leases, "doomed", "slow"); err != nil {
		t.Fatal(err)
	}
	h.ctrl.processNext(t.Context())
	if h.exists(namespaces, "", "doomed") {
		t.Error("namespace not released after its content went")
	}
}

func TestLeavesOtherFinalizers(t *testing.T) {
	h := newHarness(t, terminating("doomed", "kubernetes", "example.com/mine"), lease("doomed", "a"))

	if err := h.ctrl.reconcile(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	ns, err := h.client.Resource(namespaces).Get(t.Context(), "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace with another finalizer deleted: %v", err)
	}
	if f := specFinalizers(ns); !slices.Equal(f, []string{"example.com/mine"}) {
		t.Errorf("spec.finalizers %v, want only the other owner's", f)
	}
	if h.namespaceDeletes() != 0 {
		t.Error("namespace deleted again while another finalizer remains")
	}

	// Idempotent: nothing more to do.
	before := len(h.client.Actions())
	if err := h.ctrl.reconcile(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.client.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("second reconcile made %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestLiveNamespaceIsLeftAlone(t *testing.T) {
	live := object("v1", "Namespace", "", "live")
	_ = unstructured.SetNestedStringSlice(live.Object, []string{"kubernetes"}, "spec", "finalizers")
	h := newHarness(t, live, lease("live", "a"))

	if err := h.ctrl.reconcile(t.Context(), "live"); err != nil {
		t.Fatal(err)
	}
	if !h.exists(leases, "live", "a") || !h.exists(namespaces, "", "live") {
		t.Error("a namespace not being deleted was emptied or deleted")
	}
}

func TestIncompleteDiscoveryKeepsNamespace(t *testing.T) {
	h := newHarness(t, terminating("doomed", "kubernetes"), lease("doomed", "a"))
	h.disc.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("group unavailable")
	})

	if err := h.ctrl.reconcile(t.Context(), "doomed"); err == nil {
		t.Fatal("reconcile with failed discovery returned nil, want an error (and a retry)")
	}
	if !h.exists(namespaces, "", "doomed") {
		t.Error("namespace released although its content could not be discovered")
	}
}

func TestReleasedButNotDeletedIsDeleted(t *testing.T) {
	// A restart came between removing the finalizer and the second DELETE.
	h := newHarness(t, terminating("doomed"))
	if err := h.ctrl.reconcile(t.Context(), "doomed"); err != nil {
		t.Fatal(err)
	}
	if h.exists(namespaces, "", "doomed") {
		t.Error("released namespace not deleted")
	}
}
