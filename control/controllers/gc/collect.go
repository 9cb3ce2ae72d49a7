package gc

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// reasonInvalidNamespace is Kubernetes' event reason for an owner reference that
// cannot be followed because of the owner's and dependent's scopes.
const reasonInvalidNamespace = "OwnerRefInvalidNamespace"

// reconcile decides about one object from the graph, confirms with live reads and
// acts. It is idempotent: with nothing changed, a second call writes nothing.
func (c *Controller) reconcile(ctx context.Context, uid types.UID) error {
	n, ok := c.graph.get(uid)
	if !ok {
		// Gone, or an owner whose resource is not watched: dependents are checked on
		// their own.
		return nil
	}
	switch {
	case n.deleting && n.orphan:
		return c.orphanDependents(ctx, n)
	case n.deleting && n.foreground:
		return c.deleteDependentsFirst(ctx, n)
	case n.deleting, len(n.owners) == 0:
		return nil
	case !c.suspect(n):
		return nil
	}
	return c.collect(ctx, n)
}

// suspect reports whether n's owners need a live look: one the graph does not hold
// under the referenced identity and scope, or one in Foreground deletion. Owners the
// graph holds as they are referenced exist as far as the informers know, and their
// deletion, when it comes, sends n back through the queue.
func (c *Controller) suspect(n *node) bool {
	for _, r := range n.owners {
		o, ok := c.graph.get(r.UID)
		switch {
		case !ok, o.name != r.Name, o.kind != r.Kind, groupOf(o.apiVersion) != groupOf(r.APIVersion):
			return true
		case o.namespace != "" && o.namespace != n.namespace:
			return true
		case o.waitingForDependents():
			return true
		}
	}
	return false
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion
	}
	return gv.Group
}

// ownerState is what a live read found for one owner reference.
type ownerState int

const (
	// ownerExists: found with the referenced UID, not in Foreground deletion.
	ownerExists ownerState = iota
	// ownerAbsent: not found, or found with another UID.
	ownerAbsent
	// ownerDeletingDependents: found, marked for deletion with foregroundDeletion.
	ownerDeletingDependents
	// ownerUnresolvable: a namespaced owner of a cluster-scoped dependent.
	ownerUnresolvable
)

func (s ownerState) String() string {
	return [...]string{"exists", "absent", "deleting dependents", "unresolvable"}[s]
}

// decision is what happens to a dependent.
type decision struct {
	// dropOwners are owner UIDs to remove from the dependent's ownerReferences.
	dropOwners []types.UID
	// delete the dependent with policy.
	delete bool
	policy metav1.DeletionPropagation
}

// decide is the collector's rule for a dependent that is not itself being deleted,
// given the state of each of its owners (in ownerReferences order), whether it owns
// objects itself, and its finalizers. It follows Kubernetes' attemptToDeleteItem.
func decide(owners []metav1.OwnerReference, states []ownerState, hasDependents bool, finalizers []string) decision {
	var exists, unresolvable bool
	var absent, waiting []types.UID
	for i, s := range states {
		switch s {
		case ownerExists:
			exists = true
		case ownerUnresolvable:
			unresolvable = true
		case ownerAbsent:
			absent = append(absent, owners[i].UID)
		case ownerDeletingDependents:
			waiting = append(waiting, owners[i].UID)
		}
	}
	switch {
	case unresolvable:
		// Retrying cannot resolve it; the dependent is kept as it is.
		return decision{}
	case exists:
		// The dependent stays. References to absent owners go, and so do those to
		// owners in Foreground deletion, so that they need not wait for an object
		// that will outlive them.
		return decision{dropOwners: append(absent, waiting...)}
	case len(waiting) > 0 && hasDependents:
		// An owner waits for this dependent, which owns objects in turn: delete it in
		// the foreground so its blocking dependents go first, down the chain.
		return decision{delete: true, policy: metav1.DeletePropagationForeground}
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	return decision{delete: true, policy: policy}
}

// collect confirms n's owners with live reads and deletes n, or drops references to
// absent owners, as decide says.
func (c *Controller) collect(ctx context.Context, n *node) error {
	latest, err := c.client.Resource(n.resource).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gc: reading %s: %w", n.describe(), err)
	}
	if latest.GetUID() != n.uid || latest.GetDeletionTimestamp() != nil {
		// Replaced, or being deleted: its informer event brings it back if there is
		// anything for the collector to do.
		return nil
	}
	owners := latest.GetOwnerReferences()
	if len(owners) == 0 {
		return nil
	}
	states := make([]ownerState, len(owners))
	for i, r := range owners {
		if states[i], err = c.ownerState(ctx, n, latest, r); err != nil {
			return err
		}
	}
	d := decide(owners, states, c.graph.hasDependents(n.uid), latest.GetFinalizers())
	switch {
	case d.delete:
		return c.deleteDependent(ctx, n, latest, d.policy)
	case len(d.dropOwners) > 0:
		removed, err := c.dropOwnerRefs(ctx, n, latest, d.dropOwners)
		if err != nil {
			return err
		}
		if removed > 0 {
			c.logger.Info("removed references to absent or deleting owners; another owner exists", "object", n.describe(), "removed", removed)
		}
	}
	return nil
}

// ownerState looks up one owner of dependent n, as read live. Absence is confirmed by
// a live GET by name in the owner's scope; an owner found with another UID is absent
// too.
func (c *Controller) ownerState(ctx context.Context, n *node, dependent *metav1.PartialObjectMetadata, r metav1.OwnerReference) (ownerState, error) {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return 0, fmt.Errorf("gc: %s %s/%s: ownerReference %s %q has apiVersion %q, which is not GROUP/VERSION or VERSION: %w",
			n.kind, dependent.GetNamespace(), dependent.GetName(), r.Kind, r.Name, r.APIVersion, err)
	}
	mapping, err := c.mapper.RESTMapping(gv.WithKind(r.Kind).GroupKind(), gv.Version)
	if err != nil {
		return 0, fmt.Errorf("gc: %s %s/%s: resolving owner %s %s %q: %w",
			n.kind, dependent.GetNamespace(), dependent.GetName(), r.APIVersion, r.Kind, r.Name, err)
	}
	namespace := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		namespace = dependent.GetNamespace()
		if namespace == "" {
			c.warn(n.typed(dependent), reasonInvalidNamespace, fmt.Sprintf(
				"ownerRef [%s/%s, namespace: , name: %s, uid: %s] names a namespaced owner, but %s %s is cluster-scoped; it is never collected",
				r.APIVersion, r.Kind, r.Name, r.UID, n.kind, dependent.GetName()))
			return ownerUnresolvable, nil
		}
	}
	key := absentKey{uid: r.UID, namespace: namespace}
	if _, ok := c.absent.Get(key); ok {
		return ownerAbsent, nil
	}
	owner, err := c.client.Resource(mapping.Resource).Namespace(namespace).Get(ctx, r.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.absent.Add(key, struct{}{})
		if o, ok := c.graph.get(r.UID); ok && namespace != "" && o.namespace != namespace {
			c.warn(n.typed(dependent), reasonInvalidNamespace, fmt.Sprintf(
				"ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q; a namespaced owner must be in its dependent's namespace",
				r.APIVersion, r.Kind, o.namespace, r.Name, r.UID, namespace))
		}
		return ownerAbsent, nil
	case err != nil:
		return 0, fmt.Errorf("gc: %s %s/%s: reading owner %s %q: %w",
			n.kind, dependent.GetNamespace(), dependent.GetName(), r.Kind, r.Name, err)
	case owner.GetUID() != r.UID:
		c.absent.Add(key, struct{}{})
		return ownerAbsent, nil
	case owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents):
		return ownerDeletingDependents, nil
	}
	return ownerExists, nil
}
