package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

var (
	nodesResource  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	leasesResource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// metadataClients serves every registry resource and returns a typed client (for the
// full objects to compare with) and client-go's metadata client twice: as it is, asking
// for PartialObjectMetadata in protobuf first, and with the protobuf media ranges taken
// out of its Accept headers, so it is answered in JSON. seen records the media types
// each metadata client received.
func metadataClients(t *testing.T) (typed kubernetes.Interface, clients map[string]metadata.Interface, seen map[string]*contentTypes, store *storage.Store) {
	t.Helper()
	s := apitest.Start(t, apitest.Options{
		Resources: func(*storage.Store) ([]*apiserver.Resource, error) { return registry.All(), nil },
	})
	typed, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	clients, seen = map[string]metadata.Interface{}, map[string]*contentTypes{}
	for _, name := range []string{"protobuf", "JSON"} {
		recorded := &contentTypes{seen: map[string]string{}}
		cfg := s.RESTConfig()
		cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				if name == "JSON" {
					r = r.Clone(r.Context())
					r.Header.Set("Accept", withoutProtobuf(r.Header.Get("Accept")))
				}
				return recorded.RoundTrip(next, r)
			})
		}
		c, err := metadata.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clients[name], seen[name] = c, recorded
	}
	return typed, clients, seen, s.Store
}

// withoutProtobuf drops the protobuf media ranges from an Accept header.
func withoutProtobuf(accept string) string {
	var keep []string
	for part := range strings.SplitSeq(accept, ",") {
		if !strings.HasPrefix(strings.TrimSpace(part), "application/vnd.kubernetes.protobuf") {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, ",")
}

// wantMediaType is the media type each metadata client must be answered in.
var wantMediaType = map[string]string{"protobuf": "application/vnd.kubernetes.protobuf", "JSON": "application/json"}

func sameMetadata(t *testing.T, what string, got *metav1.PartialObjectMetadata, want metav1.ObjectMeta) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no object", what)
	}
	if !reflect.DeepEqual(got.ObjectMeta, want) {
		t.Fatalf("%s: metadata differs from the full object's:\ngot  %+v\nwant %+v", what, got.ObjectMeta, want)
	}
}

func metadataNode(name string) *corev1.Node {
	n := readyNode(name)
	n.Annotations = map[string]string{"note": "<&>"}
	n.Finalizers = []string{"example.com/keep"}
	n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "owner", UID: types.UID("uid-" + name)}}
	return n
}

// TestMetadataClientGetListPatch: client-go's metadata client reads objects and pages
// of lists as PartialObjectMetadata(List), equal to the full objects' metadata, in
// protobuf and in JSON, for cluster-scoped and namespaced resources; a patch answers
// with the patched metadata.
func TestMetadataClientGetListPatch(t *testing.T) {
	typed, clients, seen, _ := metadataClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	full := map[string]metav1.ObjectMeta{}
	for _, name := range []string{"n0", "n1", "n2"} {
		n, err := typed.CoreV1().Nodes().Create(ctx, metadataNode(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		full[name] = n.ObjectMeta
	}
	lease, err := typed.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{"a": "b"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for name, client := range clients {
		t.Run(name, func(t *testing.T) {
			got, err := client.Resource(nodesResource).Get(ctx, "n0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			requireMediaType(t, seen[name], "GET /api/v1/nodes/n0 watch=", wantMediaType[name])
			sameMetadata(t, "get n0", got, full["n0"])
			gotLease, err := client.Resource(leasesResource).Namespace("default").Get(ctx, "l", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameMetadata(t, "get lease", gotLease, lease.ObjectMeta)
			if _, err := client.Resource(nodesResource).Get(ctx, "absent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get of an absent node: %v, want NotFound", err)
			}

			page, err := client.Resource(nodesResource).List(ctx, metav1.ListOptions{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			requireMediaType(t, seen[name], "GET /api/v1/nodes watch=", wantMediaType[name])
			if len(page.Items) != 2 || page.Continue == "" || page.ResourceVersion == "" ||
				page.RemainingItemCount == nil || *page.RemainingItemCount != 1 {
				t.Fatalf("first page: %d items, continue %q, resourceVersion %q, remaining %v; want 2, a token, a version, 1",
					len(page.Items), page.Continue, page.ResourceVersion, page.RemainingItemCount)
			}
			rest, err := client.Resource(nodesResource).List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
			if err != nil {
				t.Fatal(err)
			}
			if len(rest.Items) != 1 || rest.Continue != "" || rest.ResourceVersion != page.ResourceVersion {
				t.Fatalf("last page: %d items, continue %q, resourceVersion %q; want 1, none, %q",
					len(rest.Items), rest.Continue, rest.ResourceVersion, page.ResourceVersion)
			}
			for i, item := range append(page.Items, rest.Items...) {
				sameMetadata(t, "list item "+item.Name, &item, full[[]string{"n0", "n1", "n2"}[i]])
			}
			leases, err := client.Resource(leasesResource).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: "a=b"})
			if err != nil {
				t.Fatal(err)
			}
			if len(leases.Items) != 1 {
				t.Fatalf("leases with a=b: %d, want 1", len(leases.Items))
			}
			sameMetadata(t, "listed lease", &leases.Items[0], lease.ObjectMeta)

			patched, err := client.Resource(nodesResource).Patch(ctx, "n1", types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"patched-by":"`+strings.ToLower(name)+`"}}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			requireMediaType(t, seen[name], "PATCH /api/v1/nodes/n1 watch=", wantMediaType[name])
			after, err := typed.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameMetadata(t, "patched n1", patched, after.ObjectMeta)
			full["n1"] = after.ObjectMeta
		})
	}
}

// The metadata client falls back to decoding a full object's JSON when the server does
// not convert, so what JSON the server wrote is checked on the wire: the kind, the
// items' kind, and no spec or status.
func TestMetadataJSONOnTheWire(t *testing.T) {
	typed, _, _, _ := metadataClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := typed.CoreV1().Nodes().Create(ctx, metadataNode("n0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		objectAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
		listAccept   = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	)
	rc := typed.CoreV1().RESTClient()
	for _, tc := range []struct {
		req      *rest.Request
		wantKind string
	}{
		{rc.Get().AbsPath("/api/v1/nodes/n0").SetHeader("Accept", objectAccept), "PartialObjectMetadata"},
		{rc.Get().AbsPath("/api/v1/nodes").SetHeader("Accept", listAccept), "PartialObjectMetadataList"},
		{rc.Patch(types.MergePatchType).AbsPath("/api/v1/nodes/n0").Body([]byte(`{"metadata":{"labels":{"p":"1"}}}`)).
			SetHeader("Accept", objectAccept), "PartialObjectMetadata"},
	} {
		body, err := tc.req.DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Spec       *json.RawMessage  `json:"spec"`
			Status     *json.RawMessage  `json:"status"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.APIVersion != "meta.k8s.io/v1" || got.Kind != tc.wantKind || got.Spec != nil || got.Status != nil {
			t.Fatalf("%s: %s", tc.wantKind, body)
		}
		for _, item := range got.Items {
			if !strings.HasPrefix(string(item), `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"n0"`) {
				t.Fatalf("list item %s", item)
			}
		}
	}
}

// TestMetadataClientWatch: a metadata watch sees ADDED, MODIFIED and DELETED with the
// objects' metadata, and bookmarks as PartialObjectMetadata; from a compacted
// revision it ends with a 410 ERROR. In protobuf and in JSON.
func TestMetadataClientWatch(t *testing.T) {
	typed, clients, seen, store := metadataClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := typed.CoreV1().Nodes()
	first, err := nodes.Create(ctx, readyNode("n0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: first.ResourceVersion, AllowWatchBookmarks: true}
	watches := map[string]watch.Interface{}
	for name, client := range clients {
		w, err := client.Resource(nodesResource).Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		requireMediaType(t, seen[name], "GET /api/v1/nodes watch=true", wantMediaType[name]+map[string]string{"protobuf": ";stream=watch"}[name])
		watches[name] = w
	}

	n1 := metadataNode("n1")
	n1.Finalizers = nil // deleted at once
	created, err := nodes.Create(ctx, n1, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := created.DeepCopy()
	changed.Labels["x"] = "1"
	if changed, err = nodes.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for name, w := range watches {
		var events []watch.Event
		bookmarked := false
		for len(events) < 3 || !bookmarked {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("%s: watch ended after %d events", name, len(events))
				}
				if ev.Type == watch.Bookmark {
					b, isMetadata := ev.Object.(*metav1.PartialObjectMetadata)
					bookmarked = isMetadata && b.ResourceVersion != "" && b.Name == ""
					continue
				}
				events = append(events, ev)
			case <-ctx.Done():
				t.Fatalf("%s: after %d events and bookmark %v: %v", name, len(events), bookmarked, ctx.Err())
			}
		}
		wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
		for i, ev := range events {
			m, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if ev.Type != wantTypes[i] || !ok {
				t.Fatalf("%s: event %d is %s %T, want %s PartialObjectMetadata", name, i, ev.Type, ev.Object, wantTypes[i])
			}
			switch ev.Type {
			case watch.Added:
				sameMetadata(t, name+" ADDED", m, created.ObjectMeta)
			case watch.Modified:
				sameMetadata(t, name+" MODIFIED", m, changed.ObjectMeta)
			case watch.Deleted:
				// The last state, at the revision of the deletion.
				last := changed.ObjectMeta
				last.ResourceVersion = m.ResourceVersion
				sameMetadata(t, name+" DELETED", m, last)
				if m.ResourceVersion == changed.ResourceVersion {
					t.Errorf("%s: DELETED at resourceVersion %s, the update's; want the deletion's", name, m.ResourceVersion)
				}
			}
		}
	}

	// Compact away the history after n0's creation: a watch from there gets a 410.
	rev, err := store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for name, client := range clients {
		w, err := client.Resource(nodesResource).Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		requireExpired(ctx, t, name+" metadata watch", w)
	}
}

// A request asking only for conversions the server cannot serve is refused with 406,
// never answered with a full object its client could not decode.
func TestUnservableConversionIsNotAcceptable(t *testing.T) {
	typed, _, _, _ := metadataClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := typed.CoreV1().Nodes().Create(ctx, readyNode("n0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc := typed.CoreV1().RESTClient()
	for _, tc := range []struct{ path, accept string }{
		{"/api/v1/nodes/n0", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"},
		{"/api/v1/nodes/n0", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"/api/v1/nodes", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	} {
		err := rc.Get().AbsPath(tc.path).SetHeader("Accept", tc.accept).Do(ctx).Error()
		if !apierrors.IsNotAcceptable(err) {
			t.Errorf("GET %s with Accept %q: %v, want 406 NotAcceptable", tc.path, tc.accept, err)
		}
	}
}
