package podgc

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The DisruptionTarget reason and messages, as Kubernetes' pod GC sets them (the
// out-of-service message is Plinth's: Kubernetes sets no condition there).
const (
	reasonDeletionByPodGC = "DeletionByPodGC"
	messageNodeGone       = "PodGC: node no longer exists"
	messageOutOfService   = "PodGC: node is out-of-service"
)

func orphanedCondition() *v1.PodCondition {
	return &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reasonDeletionByPodGC, Message: messageNodeGone}
}

func outOfServiceCondition() *v1.PodCondition {
	return &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reasonDeletionByPodGC, Message: messageOutOfService}
}

// markFailedAndDelete moves a pod that is not terminal to phase Failed (with cond, if
// given) and deletes it with grace period 0 and its UID as a precondition. A pod that
// is gone, or replaced by another of the same name, is not an error: there is nothing
// left to delete.
func (c *Controller) markFailedAndDelete(ctx context.Context, pod *v1.Pod, cond *v1.PodCondition) error {
	if !terminal(pod) {
		gone, err := c.markFailed(ctx, pod, cond)
		if err != nil || gone {
			return err
		}
	}
	uid := pod.UID
	zero := int64(0)
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// Only the UID precondition can conflict: the name belongs to a new pod now.
		c.logger.Debug("pod replaced before its deletion", "pod", pod.Namespace+"/"+pod.Name)
		return nil
	default:
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}

// markFailed writes phase Failed and cond through pods/status, reading the pod again
// after a conflict. gone reports that the pod went (or was replaced) meanwhile.
func (c *Controller) markFailed(ctx context.Context, pod *v1.Pod, cond *v1.PodCondition) (gone bool, err error) {
	uid := pod.UID
	refetch := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
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
		if terminal(pod) {
			return nil // someone else finished it meanwhile
		}
		updated := pod.DeepCopy()
		updated.Status.Phase = v1.PodFailed
		if cond != nil {
			setCondition(&updated.Status, *cond, metav1.NewTime(c.clock.Now()))
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("marking pod %s/%s Failed: %w", pod.Namespace, pod.Name, err)
	}
}

// setCondition puts want into status, keeping the transition time of a condition of
// the same type and status.
func setCondition(status *v1.PodStatus, want v1.PodCondition, now metav1.Time) {
	want.LastTransitionTime = now
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != want.Type {
			continue
		}
		if c.Status == want.Status {
			want.LastTransitionTime = c.LastTransitionTime
		}
		*c = want
		return
	}
	status.Conditions = append(status.Conditions, want)
}
