package tainteviction

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The DisruptionTarget condition's reason and message, as Kubernetes sets them.
const (
	reasonDeletionByTaintManager = "DeletionByTaintManager"
	messageDeletionByTaint       = "Taint manager: deleting due to NoExecute taint"
)

// processDue deletes the pods whose deadlines have come, in deadline order. Each is
// decided again from the caches first: a deadline that moved or went away since it was
// set deletes nothing.
func (c *Controller) processDue(ctx context.Context) {
	now := c.clock.Now()
	c.mu.Lock()
	due := c.takeDueLocked(now)
	c.mu.Unlock()
	keys := make([]podKey, 0, len(due))
	for k := range due {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b podKey) int {
		if d := due[a].at.Compare(due[b].at); d != 0 {
			return d
		}
		return strings.Compare(a.String(), b.String())
	})
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		c.evictDue(ctx, key, due[key])
	}
}

func (c *Controller) evictDue(ctx context.Context, key podKey, s *scheduled) {
	pod, err := c.podLister.Pods(key.Namespace).Get(key.Name)
	if err != nil || pod.UID != s.uid {
		// Gone, or replaced by a new pod of the same name that its own events cover.
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	v, node := c.decideLocked(pod)
	if !v.evict || v.at.After(now) {
		// Things changed without an event reaching us yet; put the pod where the
		// caches say it belongs.
		c.evaluateLocked(pod)
		c.mu.Unlock()
		return
	}
	c.recorder.Event(pod, v1.EventTypeNormal, eventReason, "Marking for deletion Pod "+key.String())
	c.mu.Unlock()

	if err := c.evict(ctx, pod); err != nil {
		delay := retryDelays[min(s.failures, len(retryDelays)-1)]
		c.logger.Error("deleting pod for a NoExecute taint", "pod", key.String(), "node", node, "taint", v.taint.Key, "retry_in", delay, "err", err)
		c.mu.Lock()
		// Unless something rescheduled it meanwhile.
		if _, ok := c.schedule[key]; !ok {
			c.scheduleLocked(key, &scheduled{uid: s.uid, node: s.node, at: now.Add(delay), taint: s.taint, failures: s.failures + 1})
		}
		c.mu.Unlock()
		return
	}
	c.metrics.deletions.Inc()
	c.metrics.latency.Observe(c.clock.Since(v.at).Seconds())
	c.logger.Info("pod deleted for a NoExecute taint", "pod", key.String(), "node", node, "taint", v.taint.Key)
}

// evict marks the pod with DisruptionTarget=True and deletes it. A pod that is already
// gone is not an error.
func (c *Controller) evict(ctx context.Context, pod *v1.Pod) error {
	if err := c.markDisruptionTarget(ctx, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// markDisruptionTarget sets the condition through pods/status, fetching the pod again
// after a conflict. A pod that already carries it is left as it is.
func (c *Controller) markDisruptionTarget(ctx context.Context, pod *v1.Pod) error {
	uid := pod.UID
	refetch := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refetch {
			fresh, err := c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fresh.UID != uid {
				return apierrors.NewNotFound(v1.Resource("pods"), pod.Name)
			}
			pod = fresh
		}
		refetch = true
		updated := pod.DeepCopy()
		if !setDisruptionTarget(&updated.Status, metav1.NewTime(c.clock.Now())) {
			return nil
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("setting DisruptionTarget on pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return err
	})
}

// setDisruptionTarget sets DisruptionTarget=True with the taint manager's reason and
// reports whether it changed anything.
func setDisruptionTarget(status *v1.PodStatus, now metav1.Time) bool {
	want := v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             reasonDeletionByTaintManager,
		Message:            messageDeletionByTaint,
		LastTransitionTime: now,
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != v1.DisruptionTarget {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return false
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
		*c = want
		return true
	}
	status.Conditions = append(status.Conditions, want)
	return true
}
