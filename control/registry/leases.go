package registry

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// Leases is coordination.k8s.io/v1 leases, namespaced: node heartbeats live in
// kube-node-lease, leader election in kube-system.
func Leases() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"},
		Plural:       "leases", Kind: "Lease", Namespaced: true,
		New: func() runtime.Object { return &coordinationv1.Lease{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			l := obj.(*coordinationv1.Lease)
			var errs field.ErrorList
			if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0"))
			}
			if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "leaseTransitions"), *t, "must be greater than or equal to 0"))
			}
			return errs
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Holder", Type: "string", Description: "holderIdentity contains the identity of the holder of a current lease."},
			apiserver.AgeColumn,
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			l := obj.(*coordinationv1.Lease)
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []any{holder, apiserver.Age(l.CreationTimestamp, now)}
		},
	}
}
