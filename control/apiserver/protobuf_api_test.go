package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

// contentTypes records the media types of the responses a client received, by
// request method, path and whether it was a watch.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]string
}

func (c *contentTypes) RoundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	if err == nil {
		mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if s := params["stream"]; s != "" {
			mt += ";stream=" + s
		}
		c.mu.Lock()
		c.seen[req.Method+" "+req.URL.Path+" watch="+req.URL.Query().Get("watch")] = mt
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[key]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// twoClients serves nodes and leases and returns a protobuf client (client-go's typed
// clients ask for protobuf by default, as the controllers' do) and a JSON client (as
// kubectl), each with the media types of the responses it received.
func twoClients(t *testing.T) (proto, js kubernetes.Interface, protoSeen, jsonSeen *contentTypes, store *storage.Store) {
	t.Helper()
	s := apitest.Start(t, apitest.Options{
		Resources: func(*storage.Store) ([]*apiserver.Resource, error) { return registry.All(), nil },
	})
	client := func(cfg *rest.Config) (kubernetes.Interface, *contentTypes) {
		seen := &contentTypes{seen: map[string]string{}}
		cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) { return seen.RoundTrip(next, r) })
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c, seen
	}
	proto, protoSeen = client(s.RESTConfig())
	jsonConfig := s.RESTConfig()
	// client-go's typed clients ask for protobuf unless told a content type.
	jsonConfig.ContentType = "application/json"
	js, jsonSeen = client(jsonConfig)
	return proto, js, protoSeen, jsonSeen, s.Store
}

func requireMediaType(t *testing.T, seen *contentTypes, key, want string) {
	t.Helper()
	if got := seen.get(key); got != want {
		t.Fatalf("%s answered in %q, want %q", key, got, want)
	}
}

func sameObject(t *testing.T, what string, proto, js any) {
	t.Helper()
	if !reflect.DeepEqual(proto, js) {
		t.Fatalf("%s differs between protobuf and JSON:\nprotobuf %+v\nJSON     %+v", what, proto, js)
	}
}

// TestProtobufClientsGetWhatJSONClientsGet: get, create, update, status update, patch,
// list pages and errors through a protobuf client decode to the objects a JSON client
// gets, and the responses really are protobuf.
func TestProtobufClientsGetWhatJSONClientsGet(t *testing.T) {
	proto, js, protoSeen, jsonSeen, _ := twoClients(t)
	ctx := context.Background()
	nodes, jsonNodes := proto.CoreV1().Nodes(), js.CoreV1().Nodes()

	created, err := nodes.Create(ctx, readyNode("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireMediaType(t, protoSeen, "POST /api/v1/nodes watch=", "application/vnd.kubernetes.protobuf")
	if created.UID == "" || len(created.Status.Conditions) != 1 || created.Labels["kubernetes.io/hostname"] != "n1" {
		t.Fatalf("created through protobuf: %+v", created)
	}
	compareGet := func(what string, fromWrite *corev1.Node) {
		t.Helper()
		got, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonNodes.Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		requireMediaType(t, protoSeen, "GET /api/v1/nodes/n1 watch=", "application/vnd.kubernetes.protobuf")
		requireMediaType(t, jsonSeen, "GET /api/v1/nodes/n1 watch=", "application/json")
		sameObject(t, what+": get", got, want)
		sameObject(t, what+": the write's response", fromWrite, want)
	}
	compareGet("after create", created)

	created.Labels["x"] = "1"
	created.Spec.Taints = append(created.Spec.Taints, corev1.Taint{Key: "b", Value: "v", Effect: corev1.TaintEffectNoExecute})
	updated, err := nodes.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireMediaType(t, protoSeen, "PUT /api/v1/nodes/n1 watch=", "application/vnd.kubernetes.protobuf")
	compareGet("after update", updated)

	updated.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	updated.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
	status, err := nodes.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareGet("after status update", status)

	patched, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"a"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireMediaType(t, protoSeen, "PATCH /api/v1/nodes/n1 watch=", "application/vnd.kubernetes.protobuf")
	compareGet("after patch", patched)

	// Errors are Status objects in JSON whatever was asked; client-go reads them by
	// their Content-Type.
	if _, err := nodes.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing node through protobuf: %v, want NotFound", err)
	}
	stale := created.DeepCopy()
	stale.Labels["x"] = "2"
	if _, err := nodes.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update through protobuf: %v, want Conflict", err)
	}

	// List pages: same items, continue tokens, resourceVersions and remaining counts.
	leases, jsonLeases := proto.CoordinationV1().Leases("kube-node-lease"), js.CoordinationV1().Leases("kube-node-lease")
	for i := range 5 {
		holder := fmt.Sprintf("n%d", i)
		if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: holder},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := metav1.ListOptions{Limit: 2}
	var names []string
	for {
		page, err := leases.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		requireMediaType(t, protoSeen, "GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases watch=", "application/vnd.kubernetes.protobuf")
		want, err := jsonLeases.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		// JSON items carry apiVersion and kind; protobuf has no place for them inside
		// a list (as with kube-apiserver, whose JSON items lack them too).
		for i := range want.Items {
			want.Items[i].TypeMeta = metav1.TypeMeta{}
		}
		sameObject(t, fmt.Sprintf("list page after %q", opts.Continue), page, want)
		for _, l := range page.Items {
			names = append(names, l.Name)
		}
		if page.Continue == "" {
			if page.RemainingItemCount != nil {
				t.Errorf("last page has remainingItemCount %d", *page.RemainingItemCount)
			}
			break
		}
		if page.RemainingItemCount == nil || page.ResourceVersion == "" {
			t.Fatalf("page with continue lacks remainingItemCount or resourceVersion: %+v", page.ListMeta)
		}
		opts.Continue = page.Continue
	}
	if fmt.Sprint(names) != "[n0 n1 n2 n3 n4]" {
		t.Fatalf("paged through protobuf: %v", names)
	}

	if err := nodes.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := jsonNodes.Get(ctx, "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a protobuf delete: %v, want NotFound", err)
	}
}

// TestProtobufWatchSeesWhatJSONWatchSees: the same changes watched in protobuf and in
// JSON decode to the same events; bookmarks arrive in protobuf too.
func TestProtobufWatchSeesWhatJSONWatchSees(t *testing.T) {
	proto, js, protoSeen, jsonSeen, _ := twoClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes := proto.CoreV1().Nodes()
	first, err := nodes.Create(ctx, readyNode("n0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: first.ResourceVersion, AllowWatchBookmarks: true}
	protoWatch, err := nodes.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer protoWatch.Stop()
	jsonWatch, err := js.CoreV1().Nodes().Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer jsonWatch.Stop()
	requireMediaType(t, protoSeen, "GET /api/v1/nodes watch=true", "application/vnd.kubernetes.protobuf;stream=watch")
	requireMediaType(t, jsonSeen, "GET /api/v1/nodes watch=true", "application/json")

	n, err := nodes.Create(ctx, readyNode("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["x"] = "1"
	if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// collect returns the first three non-bookmark events and whether a bookmark (with
	// a resourceVersion) came along; it waits for one after the three if none had.
	collect := func(w watch.Interface) ([]watch.Event, bool) {
		t.Helper()
		var events []watch.Event
		bookmarked := false
		for len(events) < 3 || !bookmarked {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch ended after %d events", len(events))
				}
				if ev.Type == watch.Bookmark {
					b, isNode := ev.Object.(*corev1.Node)
					bookmarked = isNode && b.ResourceVersion != ""
					continue
				}
				events = append(events, ev)
			case <-ctx.Done():
				t.Fatalf("after %d events and bookmark %v: %v", len(events), bookmarked, ctx.Err())
			}
		}
		return events, bookmarked
	}
	got, protoBookmarked := collect(protoWatch)
	want, jsonBookmarked := collect(jsonWatch)
	if !protoBookmarked || !jsonBookmarked {
		t.Fatalf("bookmarks: protobuf %v JSON %v", protoBookmarked, jsonBookmarked)
	}
	wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	for i := range got {
		if got[i].Type != wantTypes[i] || want[i].Type != wantTypes[i] {
			t.Fatalf("event %d: protobuf %s, JSON %s; want %s", i, got[i].Type, want[i].Type, wantTypes[i])
		}
		sameObject(t, fmt.Sprintf("%s event", got[i].Type), got[i].Object, want[i].Object)
	}
	if got[2].Object.(*corev1.Node).Labels["x"] != "1" {
		t.Errorf("DELETED carries %v, want the last state", got[2].Object)
	}
}

// A watch from a compacted revision ends with an ERROR event holding a 410 Status, in
// protobuf as in JSON.
func TestWatchErrorEventInBothEncodings(t *testing.T) {
	proto, js, protoSeen, _, store := twoClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := proto.CoreV1().Nodes().Create(ctx, readyNode("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two updates, so the revision after the creation's is history to compact.
	old := n.ResourceVersion
	for _, v := range []string{"1", "2"} {
		n.Labels["x"] = v
		if n, err = proto.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for name, client := range map[string]kubernetes.Interface{"protobuf": proto, "JSON": js} {
		w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: old})
		if err != nil {
			t.Fatal(err)
		}
		requireExpired(ctx, t, name+" watch", w)
	}
	requireMediaType(t, protoSeen, "GET /api/v1/nodes watch=true", "application/vnd.kubernetes.protobuf;stream=watch")
}

// What kubectl and curl send gets JSON exactly as before: objects with apiVersion and
// kind, and watch lines {"type":...,"object":...}.
func TestJSONForKubectlAndCurl(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	if _, err := ts.client.CoreV1().Nodes().Create(ctx, readyNode("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []string{"", "application/json", "*/*", "application/json, */*",
		"application/vnd.kubernetes.protobuf;q=0.5, application/json"} {
		resp := do(t, http.MethodGet, ts.url+"/api/v1/nodes/n1", "", accept)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Accept %q: Content-Type %q, want application/json", accept, ct)
		}
		var n corev1.Node
		if err := json.NewDecoder(resp.Body).Decode(&n); err != nil || n.Kind != "Node" || n.APIVersion != "v1" || n.Name != "n1" {
			t.Fatalf("Accept %q: %v, %+v", accept, err, n.TypeMeta)
		}
	}

	resp := do(t, http.MethodGet, ts.url+"/api/v1/nodes?watch=true&resourceVersion=0", "", "application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("JSON watch Content-Type %q", ct)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("watch line %q: %v", line, err)
	}
	var n corev1.Node
	if err := json.Unmarshal(ev.Object, &n); err != nil || ev.Type != "ADDED" || n.Name != "n1" || n.Kind != "Node" {
		t.Fatalf("watch line %s: %v", line, err)
	}
	// Exactly the fields of a metav1.WatchEvent, compact, one per line.
	again, _ := json.Marshal(metav1.WatchEvent{Type: ev.Type, Object: runtime.RawExtension{Raw: ev.Object}})
	if string(again)+"\n" != string(line) {
		t.Fatalf("watch line\n%s\nwant what marshalling the WatchEvent gives\n%s", line, again)
	}
}

// A clientset configured for protobuf, as the control service's loopback client is,
// still reads discovery and /version, which are JSON only; the garbage collector finds
// the resources it watches through it.
func TestProtobufConfiguredClientReadsDiscovery(t *testing.T) {
	s := apitest.Start(t, apitest.Options{
		Resources: func(*storage.Store) ([]*apiserver.Resource, error) { return registry.All(), nil },
	})
	cfg := s.RESTConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, resources, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			names = append(names, rl.GroupVersion+"/"+r.Name)
		}
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[coordination.k8s.io/v1/leases v1/nodes v1/nodes/status]" {
		t.Fatalf("discovered %v", names)
	}
	if v, err := client.Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.33.0-plinth" {
		t.Fatalf("version %+v: %v", v, err)
	}
}

// requireExpired: the first event of w, a watch from a compacted revision, is an
// ERROR carrying a 410 Expired Status. It stops w.
func requireExpired(ctx context.Context, t *testing.T, what string, w watch.Interface) {
	t.Helper()
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("%s from a compacted revision: %s %+v, want ERROR with a 410 Expired Status", what, ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatalf("%s: no event from a watch at a compacted revision", what)
	}
}
