package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// orphanDependents carries out the Orphan policy for owner: every dependent loses its
// reference to owner, then owner loses the orphan finalizer, which lets the API
// server delete it. A failure part-way leaves the finalizer, so the item is retried
// and the dependents already done are skipped.
func (c *Controller) orphanDependents(ctx context.Context, owner *node) error {
	if !c.monitors.synced() {
		return errGraphIncomplete
	}
	if ok, err := c.stillFinalizing(ctx, owner, metav1.FinalizerOrphanDependents); !ok || err != nil {
		return err
	}
	var errs []error
	orphaned := 0
	for _, d := range c.graph.dependentsOf(owner.uid) {
		removed, err := c.dropOwnerRefsLive(ctx, d, []types.UID{owner.uid})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		orphaned += removed
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents); err != nil {
		return err
	}
	c.logger.Info("orphaned dependents", "owner", owner.describe(), "dependents", orphaned)
	return nil
}

// deleteDependentsFirst carries out the Foreground policy for owner: its dependents
// are sent through the queue, where each is deleted or (when another owner exists)
// loses its reference to owner; once no dependent with blockOwnerDeletion=true names
// owner, owner loses the foregroundDeletion finalizer. A blocking dependent's removal
// sends owner back through the queue.
func (c *Controller) deleteDependentsFirst(ctx context.Context, owner *node) error {
	if !c.monitors.synced() {
		return errGraphIncomplete
	}
	blocking := 0
	for _, d := range c.graph.dependentsOf(owner.uid) {
		if d.blocks(owner.uid) {
			blocking++
		}
		if !d.deleting {
			c.queue.Add(d.uid)
		}
	}
	if blocking > 0 {
		c.logger.Debug("waiting for blocking dependents", "owner", owner.describe(), "blocking", blocking)
		return nil
	}
	if err := c.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents); err != nil {
		return err
	}
	c.logger.Info("dependents deleted; owner released", "owner", owner.describe())
	return nil
}

// stillFinalizing confirms with a live read that n is still marked for deletion with
// finalizer, so a stale graph never orphans the dependents of a live owner.
func (c *Controller) stillFinalizing(ctx context.Context, n *node, finalizer string) (bool, error) {
	obj, err := c.client.Resource(n.resource).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gc: reading %s: %w", n.describe(), err)
	}
	return obj.GetUID() == n.uid && obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), finalizer), nil
}
