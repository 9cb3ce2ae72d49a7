package registry

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/plinth/plinth/control/apiserver"
)

// DefaultNamespaces exist from the start, as in every Kubernetes cluster.
var DefaultNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, corev1.NamespaceNodeLease, metav1.NamespacePublic}

// namespaceDeletionGrace is what a DELETE of a namespace with spec.finalizers reports as
// its grace period. The namespace stays, Terminating, until its finalizers are removed
// and it is deleted again; the apiserver only keeps an object on DELETE when it has
// metadata finalizers or a positive grace period, so the namespace needs one.
const namespaceDeletionGrace = 1

// Namespaces is core/v1 namespaces, cluster-scoped, with the status subresource.
// A namespace is Active from creation and carries the "kubernetes" finalizer in
// spec.finalizers; DELETE marks it with a deletionTimestamp and phase Terminating and
// leaves it for the namespace controller, which empties it, removes its finalizers and
// deletes it again.
func Namespaces() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "namespaces", Kind: "Namespace", ShortNames: []string{"ns"},
		HasStatus: true,
		New:       func() runtime.Object { return &corev1.Namespace{} },
		Default:   func(obj runtime.Object) { defaultNamespace(obj.(*corev1.Namespace)) },
		Validate:  func(obj runtime.Object) field.ErrorList { return validateNamespace(obj.(*corev1.Namespace)) },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Status", Type: "string", Description: "The status of the namespace"},
			apiserver.AgeColumn,
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			ns := obj.(*corev1.Namespace)
			return []any{string(ns.Status.Phase), apiserver.Age(ns.CreationTimestamp, now)}
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		Hooks: apiserver.Hooks{
			GracePeriod: func(obj runtime.Object, _ *int64) int64 {
				ns := obj.(*corev1.Namespace)
				if len(ns.Spec.Finalizers) == 0 {
					return 0
				}
				// This object is what the DELETE writes: the phase goes with the mark.
				ns.Status.Phase = corev1.NamespaceTerminating
				return namespaceDeletionGrace
			},
		},
	}
}

// defaultNamespace derives the phase from the deletion mark and keeps the "kubernetes"
// finalizer on a live namespace. It runs on create and on every update, so a client can
// neither drop the finalizer nor set the phase by hand; only the namespace controller,
// once the namespace is Terminating, removes finalizers.
func defaultNamespace(ns *corev1.Namespace) {
	// The name label Kubernetes maintains on every namespace.
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
	if ns.DeletionTimestamp != nil {
		ns.Status.Phase = corev1.NamespaceTerminating
		return
	}
	ns.Status.Phase = corev1.NamespaceActive
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	// Namespace names become DNS labels in service names: stricter than other names.
	for _, msg := range validation.IsDNS1123Label(ns.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), ns.Name, msg))
	}
	for i, f := range ns.Spec.Finalizers {
		p := field.NewPath("spec", "finalizers").Index(i)
		for _, msg := range validation.IsQualifiedName(string(f)) {
			errs = append(errs, field.Invalid(p, f, msg))
		}
	}
	return errs
}

// EnsureDefaultNamespaces creates the namespaces in DefaultNamespaces that do not exist.
// It retries transient failures (the API still starting) until ctx is done.
func EnsureDefaultNamespaces(ctx context.Context, client corev1client.NamespacesGetter) error {
	for _, name := range DefaultNamespaces {
		var last error
		err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 12, Cap: 2 * time.Second},
			func(ctx context.Context) (bool, error) {
				_, err := client.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				switch {
				case err == nil, apierrors.IsAlreadyExists(err):
					return true, nil
				case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
					return false, err
				}
				last = err
				return false, nil
			})
		if err != nil {
			if last != nil {
				err = fmt.Errorf("%w (last error: %v)", err, last)
			}
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}

// ImmortalNamespaces may not be deleted, as Kubernetes' NamespaceLifecycle admission
// refuses: the cluster's own objects live there.
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// NamespaceDeletionGuard is an apiserver.Admitter that refuses to delete the
// ImmortalNamespaces with 403 Forbidden.
type NamespaceDeletionGuard struct{}

// Admit implements apiserver.Admitter.
func (NamespaceDeletionGuard) Admit(_ context.Context, a apiserver.Attributes, _, _ runtime.Object) error {
	if a.Verb != "delete" || a.Group != "" || a.Resource != "namespaces" || a.Subresource != "" {
		return nil
	}
	for _, name := range ImmortalNamespaces {
		if a.Name == name {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, a.Name, fmt.Errorf("this namespace may not be deleted"))
		}
	}
	return nil
}
