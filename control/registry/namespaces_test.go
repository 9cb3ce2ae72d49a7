package registry

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver"
)

func TestNamespaceDefaultsAndDeletion(t *testing.T) {
	r := Namespaces()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	r.Default(ns)
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes || ns.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Fatalf("defaults: %+v", ns)
	}
	r.Default(ns)
	if len(ns.Spec.Finalizers) != 1 {
		t.Fatalf("defaulting twice added the finalizer twice: %v", ns.Spec.Finalizers)
	}
	// DELETE keeps a namespace with finalizers, marking it Terminating.
	if g := r.GracePeriod(ns, nil); g <= 0 || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("grace %d phase %s: want a positive grace and Terminating", g, ns.Status.Phase)
	}
	// A terminating namespace keeps its phase and may lose its finalizers.
	now := metav1.NewTime(time.Now())
	ns.DeletionTimestamp = &now
	ns.Spec.Finalizers = nil
	r.Default(ns)
	if ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Spec.Finalizers) != 0 {
		t.Fatalf("terminating namespace after defaulting: %+v", ns)
	}
	if g := r.GracePeriod(ns, nil); g != 0 {
		t.Fatalf("a namespace without finalizers waits %d s, want 0 (removed)", g)
	}
	for name, ok := range map[string]bool{"team-a": true, "a.b": false, "Team": false, "-a": false} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if errs := r.Validate(ns); (len(errs) == 0) != ok {
			t.Errorf("namespace name %q: %v", name, errs)
		}
	}
	row := r.Row(ns, now.Add(90*time.Second))
	if row[0] != "Terminating" {
		t.Errorf("row %v", row)
	}
}

func TestNamespaceDeletionGuard(t *testing.T) {
	g := NamespaceDeletionGuard{}
	del := apiserver.Attributes{Verb: "delete", Resource: "namespaces", Name: "kube-system"}
	if err := g.Admit(context.Background(), del, nil, nil); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting kube-system: %v, want Forbidden", err)
	}
	del.Name = "team-a"
	if err := g.Admit(context.Background(), del, nil, nil); err != nil {
		t.Fatalf("deleting team-a: %v", err)
	}
	upd := apiserver.Attributes{Verb: "update", Resource: "namespaces", Name: "default"}
	if err := g.Admit(context.Background(), upd, nil, nil); err != nil {
		t.Fatalf("updating default: %v", err)
	}
}
