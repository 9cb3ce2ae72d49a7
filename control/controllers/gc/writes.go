package gc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// deleteDependent deletes n with policy, on condition that it is still the object
// that was read (UID and resourceVersion): a dependent that gained an owner since
// the decision turns into a conflict, and is decided again.
func (c *Controller) deleteDependent(ctx context.Context, n *node, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	uid, rv := latest.GetUID(), latest.GetResourceVersion()
	err := c.client.Resource(n.resource).Namespace(n.namespace).Delete(ctx, n.name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gc: deleting %s (propagation %s): %w", n.describe(), policy, err)
	}
	c.metrics.deletions.WithLabelValues(n.resource.GroupResource().String()).Inc()
	c.logger.Info("deleted object without an existing owner", "object", n.describe(), "propagation", policy)
	return nil
}

// dropOwnerRefs removes the references to the owners in drop from obj, as read, with
// a JSON merge patch carrying obj's resourceVersion, and returns how many it removed.
func (c *Controller) dropOwnerRefs(ctx context.Context, n *node, obj *metav1.PartialObjectMetadata, drop []types.UID) (int, error) {
	refs := obj.GetOwnerReferences()
	var keep []metav1.OwnerReference
	for _, r := range refs {
		if !slices.Contains(drop, r.UID) {
			keep = append(keep, r)
		}
	}
	removed := len(refs) - len(keep)
	if removed == 0 {
		return 0, nil
	}
	// A nil list marshals to null, which removes the field.
	if err := c.patchMetadata(ctx, n, obj.GetResourceVersion(), "ownerReferences", keep); err != nil {
		return 0, err
	}
	c.metrics.orphaned.Add(float64(removed))
	return removed, nil
}

// dropOwnerRefsLive is dropOwnerRefs on a fresh read of n, retried on conflicts.
func (c *Controller) dropOwnerRefsLive(ctx context.Context, n *node, drop []types.UID) (int, error) {
	removed := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.client.Resource(n.resource).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("gc: reading %s: %w", n.describe(), err)
		}
		if obj.GetUID() != n.uid {
			return nil
		}
		removed, err = c.dropOwnerRefs(ctx, n, obj, drop)
		return err
	})
	return removed, err
}

// removeFinalizer removes finalizer from n, read afresh and retried on conflicts.
// When it is the last finalizer of an object marked for deletion, the API server
// deletes the object.
func (c *Controller) removeFinalizer(ctx context.Context, n *node, finalizer string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.client.Resource(n.resource).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("gc: reading %s: %w", n.describe(), err)
		}
		if obj.GetUID() != n.uid {
			return nil
		}
		finalizers := obj.GetFinalizers()
		keep := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == finalizer })
		if len(keep) == len(finalizers) {
			return nil
		}
		if len(keep) == 0 {
			keep = nil
		}
		return c.patchMetadata(ctx, n, obj.GetResourceVersion(), "finalizers", keep)
	})
}

// patchMetadata sets one metadata field of n by JSON merge patch, on condition that
// n is still at resourceVersion.
func (c *Controller) patchMetadata(ctx context.Context, n *node, resourceVersion, field string, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, field: value}})
	if err != nil {
		return fmt.Errorf("gc: patch of %s: %w", n.describe(), err)
	}
	_, err = c.client.Resource(n.resource).Namespace(n.namespace).Patch(ctx, n.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gc: patching metadata.%s of %s: %w", field, n.describe(), err)
	}
	return nil
}
