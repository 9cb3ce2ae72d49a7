package nodelifecycle

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// taintWrite is what writeTaints did.
type taintWrite struct {
	// added: a NoExecute taint went on a node that had none (not a swap).
	addedNoExecute bool
	// queue: the node should wait in its zone's queue for a NoExecute taint.
	queue bool
	// written is the node as updated, nil when nothing was written.
	written *v1.Node
}

// writeTaints brings the node's taints in line with its conditions, spec and NoExecute
// intent, and may add a NoExecute taint to a node without one only when mayAdd. node is
// the caller's copy; the first attempt writes from it, and after a conflict the node
// is fetched again and everything is decided again from the fresh object. Only the
// controller's own taints change; the update carries the resourceVersion it was
// computed from, so another writer's taint is never lost.
func (c *Controller) writeTaints(ctx context.Context, node *v1.Node, mayAdd bool) (taintWrite, error) {
	// Most calls change nothing (the sweep reconciles every node), so the caller's copy
	// decides first whether there is anything to write. Reading every node fresh
	// instead made a sweep of N nodes N requests: at 1,000 nodes behind the loopback
	// client's rate limit, ten seconds in which no deadline was served. A copy that
	// is stale is behind a change whose event is on its way, and that event plans
	// again from the newer object.
	if w, nothing := c.nothingToWrite(node, mayAdd); nothing {
		return w, nil
	}
	// The sweep, the informer handlers and the token timer all write taints. Each write
	// starts from a fresh read, one at a time: a write planned from a cached copy that
	// another path just changed would drop that path's taint wherever the API does not
	// enforce resourceVersion (the fake clientset) and costs a conflict where it does.
	c.taintWriteMu.Lock()
	defer c.taintWriteMu.Unlock()
	var result taintWrite
	refetch := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		result = taintWrite{}
		if refetch {
			fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("getting node %q: %w", node.Name, err)
			}
			node = fresh
		}
		refetch = true
		now := c.clock.Now()
		c.mu.Lock()
		intent, eligible := c.noExecuteIntentLocked(node, now)
		c.mu.Unlock()
		intent.mayAdd = mayAdd && eligible
		hadNoExecute := hasNoExecute(node, v1.TaintNodeNotReady) || hasNoExecute(node, v1.TaintNodeUnreachable)
		plan := planTaints(node.Spec.Taints, wantedNoSchedule(node), intent, metav1.NewTime(now))
		result.queue = plan.pending && eligible
		if !plan.changed {
			return nil
		}
		updated := node.DeepCopy()
		updated.Spec.Taints = plan.taints
		written, err := c.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		result.written = written
		result.addedNoExecute = intent.key != "" && !hadNoExecute && hasNoExecute(updated, intent.key)
		c.logger.Info("node taints updated", "node", node.Name, "added", plan.added, "removed", plan.removed)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return taintWrite{}, nil
	}
	if err != nil {
		return taintWrite{}, fmt.Errorf("updating taints of node %q: %w", node.Name, err)
	}
	return result, nil
}

// nothingToWrite plans the node's taints from node as given and reports whether that
// plan changes nothing, with whether the node should queue for a NoExecute taint.
func (c *Controller) nothingToWrite(node *v1.Node, mayAdd bool) (taintWrite, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	intent, eligible := c.noExecuteIntentLocked(node, now)
	c.mu.Unlock()
	intent.mayAdd = mayAdd && eligible
	plan := planTaints(node.Spec.Taints, wantedNoSchedule(node), intent, metav1.NewTime(now))
	if plan.changed {
		return taintWrite{}, false
	}
	return taintWrite{queue: plan.pending && eligible}, true
}

// reconcileTaints applies the taint changes that need no token: NoSchedule taints,
// NoExecute swaps and removals. A node that needs a new NoExecute taint joins its
// zone's queue. It returns the node as written, or as given when nothing was.
func (c *Controller) reconcileTaints(ctx context.Context, node *v1.Node) *v1.Node {
	w, err := c.writeTaints(ctx, node, false)
	if err != nil {
		c.logger.Error("reconciling node taints", "node", node.Name, "err", err)
		return node
	}
	if w.queue {
		c.mu.Lock()
		c.enqueueLocked(node, c.clock.Now())
		c.mu.Unlock()
	}
	if w.written != nil {
		return w.written
	}
	return node
}

// reconcileDirty reconciles the taints of the nodes that changed since the last call,
// so a node's taints follow its conditions and spec without waiting for a sweep.
func (c *Controller) reconcileDirty(ctx context.Context) {
	c.mu.Lock()
	names := make([]string, 0, len(c.dirty))
	for name := range c.dirty {
		names = append(names, name)
	}
	clear(c.dirty)
	c.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		node, err := c.nodeLister.Get(name)
		if err != nil {
			continue // deleted since; the delete handler forgot it
		}
		c.reconcileTaints(ctx, node)
	}
}

// taintPass adds NoExecute taints to the queued nodes whose zones have tokens. A node
// whose write fails goes to the back of its queue; its token is spent, so a failing
// API server is retried at the zone's rate rather than in a loop. fresh is as for
// takeDueLocked.
func (c *Controller) taintPass(ctx context.Context, fresh map[string]*v1.Node) {
	c.mu.Lock()
	due := c.takeDueLocked(c.clock.Now(), fresh)
	c.mu.Unlock()
	for _, d := range due {
		node, err := c.freshNode(d.name, fresh)
		if err != nil {
			continue
		}
		w, err := c.writeTaints(ctx, node, true)
		if err != nil {
			c.logger.Error("adding NoExecute taint", "node", d.name, "zone", zoneLabel(d.zone), "err", err)
			c.mu.Lock()
			c.enqueueLocked(node, c.clock.Now())
			c.mu.Unlock()
			continue
		}
		if w.addedNoExecute {
			c.metrics.evictions.WithLabelValues(zoneLabel(d.zone)).Inc()
		}
	}
}
