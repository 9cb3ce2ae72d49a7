package registry_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/registry"
)

func TestNamespaceTerminates(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	nss := api.client.CoreV1().Namespaces()
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.client.CoreV1().Pods("doomed").Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a namespace with the kubernetes finalizer is gone right after DELETE: %v", err)
	}
	if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace: deletionTimestamp %v phase %q; want set and Terminating", ns.DeletionTimestamp, ns.Status.Phase)
	}
	_, err = api.client.CoreV1().Pods("doomed").Create(ctx, testPod("late"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("pod in a terminating namespace: %v, want Forbidden", err)
	}
	if s := cell(t, table(t, api.url+"/api/v1/namespaces/doomed"), 0, "Status"); s != "Terminating" {
		t.Fatalf("STATUS %v, want Terminating", s)
	}
	list, err := nss.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Terminating"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "doomed" {
		t.Fatalf("field selector status.phase=Terminating: %v, %v", list, err)
	}
	// Other writes leave it Terminating, with its finalizer.
	ns.Labels["x"] = "y"
	if ns, err = nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("label update of a terminating namespace: %v, phase %q", err, ns.Status.Phase)
	}

	// What the namespace controller does once the namespace is empty: drop the
	// finalizer, delete again. Then it is gone.
	if err := api.client.CoreV1().Pods("doomed").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err = nss.Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace after its finalizer was removed and it was deleted again: %v, want NotFound", err)
	}
}

func TestGracefulPodDeletion(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	pods := api.client.CoreV1().Pods("default")
	bound := testPod("web")
	bound.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A bound pod is deleted gracefully: marked, left to its node.
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("after graceful delete: %v, %+v; want marked with 30s", err, p.ObjectMeta)
	}
	if cell(t, table(t, api.url+"/api/v1/namespaces/default/pods/web"), 0, "Status") != "Terminating" {
		t.Fatal("a pod marked for deletion is not shown Terminating")
	}
	// The node writes status while it stops the containers: the pod stays.
	p.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("a terminating pod vanished on a status update: %v", err)
	}
	// Then confirms with grace 0.
	zero := int64(0)
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete with grace 0: %v", err)
	}
}

func TestEviction(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	pods := api.client.CoreV1().Pods("default")
	for _, name := range []string{"a", "b"} {
		p := testPod(name)
		p.Spec.NodeName = "n1" // created bound, as a static pod would be
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}); err != nil {
		t.Fatalf("eviction: %v", err)
	}
	a, err := pods.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || a.DeletionTimestamp == nil || *a.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("evicted pod: %v %+v; want marked for graceful deletion with 30s", err, a.ObjectMeta)
	}
	grace := int64(0)
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "b"}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod evicted with grace 0: %v, want NotFound", err)
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}); !apierrors.IsNotFound(err) {
		t.Fatalf("eviction of a missing pod: %v, want NotFound", err)
	}

	// The raw answer is Kubernetes': 201 with a Success status.
	req, _ := http.NewRequest(http.MethodPost, api.url+"/api/v1/namespaces/default/pods/a/eviction",
		strings.NewReader(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	if resp.StatusCode != http.StatusCreated || st.Status != metav1.StatusSuccess || st.Kind != "Status" {
		t.Fatalf("eviction answer %d %+v, want 201 Success", resp.StatusCode, st)
	}
}
