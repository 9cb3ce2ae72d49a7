package node

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxStatusTries bounds refetch-and-retry on conflicts within one status update, as
// kubelet's nodeStatusUpdateRetry does.
const maxStatusTries = 5

// RunStatus computes node status every StatusUpdateFrequency until ctx is done, and
// posts it when something changed (a condition's status, reason or message, the
// addresses, capacity, allocatable or nodeInfo) or StatusReportFrequency has passed
// since the last report. When the condition source is a ConditionNotifier, a change it
// announces starts an update at once, and the next period counts from there. Failures
// are logged, counted and retried on the next tick. It returns nil when ctx is done.
func (a *Agent) RunStatus(ctx context.Context) error {
	a.statusLive.start()
	defer a.statusLive.stop()
	var changed <-chan struct{}
	if n, ok := a.conditions.(ConditionNotifier); ok {
		changed = n.Changed()
	}
	for {
		a.syncStatusMeasured(ctx)
		a.statusLive.iterated()
		if !a.waitOrChange(ctx, a.cfg.StatusUpdateFrequency, changed) {
			return nil
		}
	}
}

// waitOrChange is wait that also ends when changed receives; false means ctx ended.
func (a *Agent) waitOrChange(ctx context.Context, d time.Duration, changed <-chan struct{}) bool {
	t := a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	case <-changed:
		a.logger.Debug("node conditions changed; updating status now")
		return true
	}
}

func (a *Agent) syncStatusMeasured(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, a.cfg.StatusUpdateFrequency)
	defer cancel()
	sent, err := a.syncStatus(ctx)
	switch {
	case err != nil && parent.Err() != nil:
		// Shutting down: not a failure of the control service.
	case err != nil:
		a.metrics.statusUpdates.WithLabelValues(resultError).Inc()
		a.logger.Warn("node status update failed; retrying next period", "retryIn", a.cfg.StatusUpdateFrequency, "err", err)
	case sent:
		a.metrics.statusUpdates.WithLabelValues(resultSuccess).Inc()
	}
}

// syncStatus reads the Node, merges the desired status into it, and writes it when it
// changed or a report is due. It reads the Node every time, rather than trusting what
// it last sent, because others write status too: the node lifecycle controller sets
// Ready to Unknown while the node is unreachable, and that must be corrected as soon
// as the node is back, not at the next periodic report.
//
// The first read accepts any version (resourceVersion=0), as kubelet's does: the
// control service answers it from memory, which matters when thousands of nodes read
// every 10 s. A copy a moment old is harmless, because a write based on it fails with
// a conflict, and the retries read the latest.
func (a *Agent) syncStatus(ctx context.Context) (sent bool, err error) {
	nodes := a.client.Nodes()
	want := desiredConditions(a.conditions)
	for try := 1; try <= maxStatusTries; try++ {
		opts := metav1.GetOptions{}
		if try == 1 {
			opts.ResourceVersion = "0"
		}
		current, err := nodes.Get(ctx, a.cfg.NodeName, opts)
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("node %s does not exist (not registered yet, or deleted)", a.cfg.NodeName)
		}
		if err != nil {
			return false, fmt.Errorf("getting node %s: %w", a.cfg.NodeName, err)
		}
		if current.UID != "" {
			a.setNodeUID(current.UID)
		}
		now := metav1.NewTime(a.clock.Now())
		node := current.DeepCopy()
		factsChanged := a.applyStatusFacts(&node.Status)
		conds, condsChanged := mergeConditions(node.Status.Conditions, want, now)
		due := a.lastReport.IsZero() || a.clock.Since(a.lastReport) >= a.cfg.StatusReportFrequency
		if !factsChanged && !condsChanged && !due {
			return false, nil
		}
		stampHeartbeat(conds, want, now)
		node.Status.Conditions = conds
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("updating status of node %s: %w", a.cfg.NodeName, err)
		}
		a.lastReport = now.Time
		if factsChanged || condsChanged {
			a.logger.Info("node status changed and reported", "facts", factsChanged, "conditions", condsChanged)
		}
		return true, nil
	}
	return false, fmt.Errorf("updating status of node %s: still conflicting after %d tries", a.cfg.NodeName, maxStatusTries)
}
