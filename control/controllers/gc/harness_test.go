package gc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	nodes  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// testMapper knows Leases (namespaced) and Nodes (cluster-scoped), as discovery would.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(leases.GroupVersion().WithKind("Lease"), meta.RESTScopeNamespace)
	m.Add(nodes.GroupVersion().WithKind("Node"), meta.RESTScopeRoot)
	return m
}

// testDiscovery serves nodes (with their status subresource), events and leases.
func testDiscovery() *fakediscovery.FakeDiscovery {
	verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{
		Resources: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "nodes", Kind: "Node", Verbs: verbs},
				{Name: "nodes/status", Kind: "Node", Verbs: metav1.Verbs{"get", "patch", "update"}},
				{Name: "events", Kind: "Event", Namespaced: true, Verbs: verbs},
				{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			}},
			{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
				{Name: "leases", Kind: "Lease", Namespaced: true, Verbs: verbs},
			}},
		},
	}}
}

// recordedEvents is a fake EventRecorder.
type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *recordedEvents) Event(obj runtime.Object, eventtype, reason, message string) {
	acc, _ := meta.Accessor(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s/%s", eventtype, reason, acc.GetNamespace(), acc.GetName()))
}

func (r *recordedEvents) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

type harness struct {
	t        *testing.T
	ctrl     *Controller
	client   *metadatafake.FakeMetadataClient
	events   *recordedEvents
	registry *prometheus.Registry
}

// newHarness builds a collector over a fake metadata client holding the metadata of
// objs. Its graph is fed by observe and forget below, standing in for the informers,
// so each test decides exactly what the collector has seen.
func newHarness(t *testing.T, objs ...*unstructured.Unstructured) *harness {
	t.Helper()
	var ros []runtime.Object
	for _, o := range objs {
		ros = append(ros, partial(o))
	}
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, ros...)
	events := &recordedEvents{}
	reg := prometheus.NewRegistry()
	ctrl, err := New(Config{
		Client: client, Discovery: testDiscovery(), Mapper: testMapper(), Clock: testingclock.NewFakeClock(t0),
		Registerer: reg, Recorder: events, Options: DefaultOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.queue.ShutDown)
	h := &harness{t: t, ctrl: ctrl, client: client, events: events, registry: reg}
	for _, o := range objs {
		h.observe(o)
	}
	return h
}

// partial is o's metadata as the fake metadata client holds it: PartialObjectMetadata
// under o's apiVersion and kind, from which the fake's tracker guesses the resource.
func partial(o *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	p := meta.AsPartialObjectMetadata(o.DeepCopy())
	p.APIVersion, p.Kind = o.GetAPIVersion(), o.GetKind()
	return p
}

func resourceOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	if o.GetKind() == "Node" {
		return nodes
	}
	return leases
}

// observe is an informer's add or update event.
func (h *harness) observe(o *unstructured.Unstructured) {
	h.ctrl.monitors.observe(resourceOf(o), o.GetKind(), partial(o))
}

// forget is an informer's delete event.
func (h *harness) forget(o *unstructured.Unstructured) {
	h.ctrl.monitors.deleted(resourceOf(o), o.GetKind(), partial(o))
}

// drain processes queued items until the queue is empty.
func (h *harness) drain() {
	h.t.Helper()
	for i := 0; h.ctrl.queue.Len() > 0; i++ {
		if i > 1000 {
			h.t.Fatal("the queue does not drain")
		}
		h.ctrl.processNext(h.t.Context())
	}
}

// reconcile processes one object and fails the test on error.
func (h *harness) reconcile(o *unstructured.Unstructured) {
	h.t.Helper()
	if err := h.ctrl.reconcile(h.t.Context(), o.GetUID()); err != nil {
		h.t.Fatalf("reconcile %s: %v", o.GetName(), err)
	}
}

// get reads an object's metadata from the fake; nil when it is gone.
func (h *harness) get(o *unstructured.Unstructured) *unstructured.Unstructured {
	h.t.Helper()
	got, err := h.client.Resource(resourceOf(o)).Namespace(o.GetNamespace()).Get(context.Background(), o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		h.t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// writes lists the write actions the collector made, as "verb resource ns/name".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			out = append(out, fmt.Sprintf("delete %s %s/%s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		case clienttesting.PatchAction:
			out = append(out, fmt.Sprintf("patch %s %s/%s", a.GetResource().Resource, a.GetNamespace(), a.GetName()))
		case clienttesting.UpdateAction:
			acc, _ := meta.Accessor(a.GetObject())
			out = append(out, fmt.Sprintf("update %s %s/%s", a.GetResource().Resource, a.GetNamespace(), acc.GetName()))
		}
	}
	return out
}

// deleteOptions returns the options of the collector's DELETE of name.
func (h *harness) deleteOptions(name string) (metav1.DeleteOptions, bool) {
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok && d.GetName() == name {
			return d.DeleteOptions, true
		}
	}
	return metav1.DeleteOptions{}, false
}

func ownerRef(o *unstructured.Unstructured, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: &block}
}

func lease(namespace, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("coordination.k8s.io/v1")
	u.SetKind("Lease")
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-lease-" + namespace + "-" + name))
	u.SetOwnerReferences(owners)
	return u
}

func nodeObj(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Node")
	u.SetName(name)
	u.SetUID(types.UID("uid-node-" + name))
	u.SetOwnerReferences(owners)
	return u
}

// markDeleted gives o a deletionTimestamp and finalizers, as a DELETE with a
// propagation policy does.
func markDeleted(o *unstructured.Unstructured, finalizers ...string) *unstructured.Unstructured {
	ts := metav1.NewTime(t0)
	o.SetDeletionTimestamp(&ts)
	o.SetFinalizers(finalizers)
	return o
}

// withUID returns a copy of o under another UID: the same name, recreated.
func withUID(o *unstructured.Unstructured, uid types.UID) *unstructured.Unstructured {
	c := o.DeepCopy()
	c.SetUID(uid)
	return c
}

func ownerUIDs(o *unstructured.Unstructured) []types.UID {
	var out []types.UID
	for _, r := range o.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// counterValue reads a counter without the testutil package (whose diff dependency
// the module does not carry).
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
