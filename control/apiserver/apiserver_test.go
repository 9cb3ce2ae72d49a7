package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

type testServer struct {
	url    string
	client kubernetes.Interface
	store  *storage.Store
}

// newTestServer serves nodes and leases from a real embedded etcd over plain HTTP on
// loopback; authentication is tested separately.
func newTestServer(t *testing.T) testServer {
	t.Helper()
	s := apitest.Start(t, apitest.Options{
		Resources: func(*storage.Store) ([]*apiserver.Resource, error) { return registry.All(), nil },
	})
	return testServer{url: s.URL, client: s.Client, store: s.Store}
}

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PlinthdReady"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v0.1.0"},
		},
	}
}

func TestNodeLifecycleThroughClientGo(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	nodes := ts.client.CoreV1().Nodes()

	created, err := nodes.Create(ctx, readyNode("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Generation != 1 {
		t.Fatalf("server-owned metadata not set: %+v", created.ObjectMeta)
	}
	if len(created.Status.Conditions) != 1 {
		t.Fatalf("create dropped status: %+v", created.Status)
	}
	if _, err := nodes.Create(ctx, readyNode("n1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("duplicate create: %v, want AlreadyExists", err)
	}

	// Optimistic concurrency: an update carrying an old resourceVersion is a 409.
	first := created.DeepCopy()
	first.Labels["x"] = "1"
	updated, err := nodes.Update(ctx, first, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 1 {
		t.Fatalf("a label change bumped generation to %d", updated.Generation)
	}
	stale := created.DeepCopy()
	stale.Labels["x"] = "2"
	_, err = nodes.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want Conflict", err)
	}
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != http.StatusConflict {
		t.Fatalf("stale update status: %v, want code 409", err)
	}

	// The main resource cannot change status; a spec change bumps generation.
	next := updated.DeepCopy()
	next.Spec.Unschedulable = true
	next.Status.Conditions[0].Status = corev1.ConditionFalse
	next, err = nodes.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation != 2 || next.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("after spec update: generation %d, Ready %s; want 2 and True (status kept)", next.Generation, next.Status.Conditions[0].Status)
	}
	// The status subresource changes only status.
	st := next.DeepCopy()
	st.Status.Conditions[0].Status = corev1.ConditionFalse
	st.Spec.Unschedulable = false
	st, err = nodes.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.Conditions[0].Status != corev1.ConditionFalse || !st.Spec.Unschedulable {
		t.Fatalf("status update: Ready %s unschedulable %v; want False and true", st.Status.Conditions[0].Status, st.Spec.Unschedulable)
	}

	// JSON merge patch, as kubectl label sends.
	p, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"zone":"a"}}}`), metav1.PatchOptions{})
	if err != nil || p.Labels["zone"] != "a" || p.Labels["x"] != "1" {
		t.Fatalf("merge patch: %v labels %v", err, p.Labels)
	}
	// Strategic merge patch: lists with a merge key merge by it (the node's addresses
	// under /status); taints have none, so kubectl taint sends the whole list.
	p, err = nodes.Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"spec":{"taints":[{"key":"a","effect":"NoSchedule"},{"key":"b","effect":"NoExecute"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tn := range p.Spec.Taints {
		keys = append(keys, tn.Key)
	}
	slices.Sort(keys)
	if fmt.Sprint(keys) != "[a b]" {
		t.Fatalf("strategic merge patch taints %v, want [a b]", keys)
	}
	if _, err := nodes.Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"status":{"addresses":[{"type":"Hostname","address":"n1"}]}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	p, err = nodes.Patch(ctx, "n1", types.StrategicMergePatchType, []byte(`{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}`), metav1.PatchOptions{}, "status")
	if err != nil || len(p.Status.Addresses) != 2 {
		t.Fatalf("strategic merge of addresses by type: %v, %v; want both addresses", err, p.Status.Addresses)
	}
	// JSON patch with a failing test operation changes nothing.
	_, err = nodes.Patch(ctx, "n1", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/labels/zone","value":"b"},{"op":"remove","path":"/spec/taints"}]`), metav1.PatchOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("failing json patch: %v, want BadRequest", err)
	}
	// A merge patch of status through the subresource.
	p, err = nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"status":{"nodeInfo":{"kubeletVersion":"v9"}}}`), metav1.PatchOptions{}, "status")
	if err != nil || p.Status.NodeInfo.KubeletVersion != "v9" {
		t.Fatalf("status patch: %v, version %q", err, p.Status.NodeInfo.KubeletVersion)
	}

	// Invalid objects are refused with field causes and change nothing.
	bad := readyNode("n1")
	bad.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Sometimes"}}
	bad.ResourceVersion = p.ResourceVersion
	_, err = nodes.Update(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.taints[0].effect") {
		t.Fatalf("invalid taint: %v, want Invalid naming spec.taints[0].effect", err)
	}
	if _, err := nodes.Create(ctx, readyNode("Not_A_Name"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name") {
		t.Fatalf("bad name: %v, want Invalid naming metadata.name", err)
	}

	if err := nodes.Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Get(ctx, "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestStrictFieldValidationAndDryRun(t *testing.T) {
	ts := newTestServer(t)
	body := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"bogus":true}}`
	resp := do(t, http.MethodPost, ts.url+"/api/v1/nodes?fieldValidation=Strict", body, "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("strict create with unknown field: %d, want 400", resp.StatusCode)
	}
	resp = do(t, http.MethodPost, ts.url+"/api/v1/nodes?dryRun=All", body, "")
	if resp.StatusCode != http.StatusCreated || !strings.Contains(resp.Header.Get("Warning"), "bogus") {
		t.Fatalf("dry-run create: %d warning %q; want 201 with a warning about bogus", resp.StatusCode, resp.Header.Get("Warning"))
	}
	if _, err := ts.client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run stored the node: %v", err)
	}
}

func do(t *testing.T, method, url, body, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestTableOutputForKubectl(t *testing.T) {
	ts := newTestServer(t)
	n := readyNode("worker-1")
	n.Labels["node-role.kubernetes.io/worker"] = ""
	if _, err := ts.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	accept := "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	resp := do(t, http.MethodGet, ts.url+"/api/v1/nodes?limit=500", "", accept)
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if fmt.Sprint(cols) != "[Name Status Roles Age Version]" || len(table.Rows) != 1 {
		t.Fatalf("table columns %v with %d rows", cols, len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[0] != "worker-1" || cells[1] != "Ready" || cells[2] != "worker" || cells[4] != "v0.1.0" {
		t.Fatalf("row cells %v", cells)
	}
	var pom metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &pom); err != nil || pom.Name != "worker-1" {
		t.Fatalf("row object %s: %v", table.Rows[0].Object.Raw, err)
	}
}

func TestListSelectorsAndPagination(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	leases := ts.client.CoordinationV1().Leases("kube-node-lease")
	for i := range 7 {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{"parity": fmt.Sprint(i % 2)}}}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.client.CoordinationV1().Leases("other").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	opts := metav1.ListOptions{LabelSelector: "parity=0", Limit: 2}
	for {
		page, err := leases.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Items {
			names = append(names, l.Name)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if fmt.Sprint(names) != "[n0 n2 n4 n6]" {
		t.Fatalf("paged selected names %v", names)
	}
	all, err := ts.client.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n0"})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("cluster-wide field-selected list: %v, %d items; want 2", err, len(all.Items))
	}
	if _, err := leases.List(ctx, metav1.ListOptions{FieldSelector: "spec.holderIdentity=x"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("unsupported field selector: %v, want BadRequest", err)
	}
}

// TestInformerSyncsAndFollows runs a client-go informer, which uses watch-list: it must
// get the initial objects, the initial-events-end bookmark, and later changes.
func TestInformerSyncsAndFollows(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := ts.client.CoreV1().Nodes().Create(ctx, readyNode("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(ts.client, 0)
	informer := factory.Core().V1().Nodes()
	lister := informer.Lister()
	informer.Informer()
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop only once ctx is cancelled.
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := lister.Get("before"); err != nil {
		t.Fatalf("synced cache lacks the existing node: %v", err)
	}
	if _, err := ts.client.CoreV1().Nodes().Create(ctx, readyNode("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ts.client.CoreV1().Nodes().Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, errAfter := lister.Get("after")
		_, errBefore := lister.Get("before")
		if errAfter == nil && apierrors.IsNotFound(errBefore) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("informer did not follow: after=%v before=%v", errAfter, errBefore)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestWatchFromCompactedRevisionIsGone(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	n, err := ts.client.CoreV1().Nodes().Create(ctx, readyNode("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := n.ResourceVersion
	for _, v := range []string{"y", "z"} {
		n.Labels["x"] = v
		if n, err = ts.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := ts.store.CurrentRevision(ctx)
	if err := ts.store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	w, err := ts.client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != "ERROR" || !ok || st.Code != http.StatusGone {
			t.Fatalf("watch from compacted revision: %s %+v, want ERROR 410", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event from a watch at a compacted revision")
	}
}

func TestDiscoveryListsResources(t *testing.T) {
	ts := newTestServer(t)
	groups, resources, err := ts.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var gnames []string
	for _, g := range groups {
		gnames = append(gnames, g.Name)
	}
	var rnames []string
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			rnames = append(rnames, rl.GroupVersion+"/"+r.Name)
		}
	}
	slices.Sort(rnames)
	if !slices.Contains(gnames, "coordination.k8s.io") || fmt.Sprint(rnames) != "[coordination.k8s.io/v1/leases v1/nodes v1/nodes/status]" {
		t.Fatalf("groups %v resources %v", gnames, rnames)
	}
	v, err := ts.client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.33.0-plinth" {
		t.Fatalf("version %+v: %v", v, err)
	}
}
