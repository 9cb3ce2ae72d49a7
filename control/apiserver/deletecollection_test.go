package apiserver_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
)

// refuseDeleting refuses the deletion of one named object, as a guard such as the
// system namespaces' does, and records the attributes of every deletion it sees.
type refuseDeleting struct {
	name string
	seen *[]apiserver.Attributes
}

func (r refuseDeleting) Admit(_ context.Context, a apiserver.Attributes, obj, _ runtime.Object) error {
	if obj != nil { // creates and updates
		return nil
	}
	*r.seen = append(*r.seen, a)
	if a.Name == r.name {
		return errors.New("this one stays")
	}
	return nil
}

func leaseNames(t *testing.T, client kubernetes.Interface, namespace string) []string {
	t.Helper()
	list, err := client.CoordinationV1().Leases(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
	}
	return names
}

func TestDeleteCollection(t *testing.T) {
	var seen []apiserver.Attributes
	s := apitest.Start(t, apitest.Options{Admitters: []apiserver.Admitter{refuseDeleting{name: "guarded", seen: &seen}}})
	ctx := context.Background()
	for _, ns := range []string{"a", "b"} {
		if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for name, tier := range map[string]string{"web-1": "web", "web-2": "web", "db": "db"} {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": tier}}}
			if _, err := s.Client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	leases := s.Client.CoordinationV1().Leases("a")

	// A dry run deletes nothing.
	if err := leases.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "tier=web"}); err != nil {
		t.Fatal(err)
	}
	if got := leaseNames(t, s.Client, "a"); len(got) != 3 {
		t.Fatalf("after a dry run namespace a holds %v, want all three", got)
	}

	// The selector and the namespace bound what goes; admission sees single deletes.
	seen = nil
	if err := leases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=web"}); err != nil {
		t.Fatal(err)
	}
	if got := leaseNames(t, s.Client, "a"); !slices.Equal(got, []string{"db"}) {
		t.Errorf("namespace a holds %v after deleting tier=web, want [db]", got)
	}
	if got := leaseNames(t, s.Client, "b"); len(got) != 3 {
		t.Errorf("namespace b holds %v, want its three untouched", got)
	}
	if len(seen) != 2 || seen[0].Verb != "delete" || seen[0].Namespace != "a" || seen[0].Name != "web-1" || seen[1].Name != "web-2" {
		t.Errorf("admission saw %+v; want a delete of a/web-1 and of a/web-2", seen)
	}

	// A refused object stops the collection with its error; what came before is gone.
	for _, name := range []string{"a-first", "guarded", "z-last"} {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "batch"}}}
		if _, err := s.Client.CoordinationV1().Leases("b").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Client.CoordinationV1().Leases("b").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=batch"})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("deleting a collection holding a guarded object: %v, want Forbidden", err)
	}
	got := leaseNames(t, s.Client, "b")
	if slices.Contains(got, "a-first") || !slices.Contains(got, "guarded") || !slices.Contains(got, "z-last") {
		t.Errorf("namespace b holds %v; want a-first deleted, guarded and z-last kept", got)
	}

	// Across all namespaces.
	if err := s.Client.CoordinationV1().Leases("").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=db"}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"a", "b"} {
		if got := leaseNames(t, s.Client, ns); slices.Contains(got, "db") {
			t.Errorf("namespace %s still holds db after deleting tier=db everywhere: %v", ns, got)
		}
	}
}
