package nodelifecycle

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// podNodeIndex indexes the pod cache by spec.nodeName. The name is this package's own,
// so other controllers sharing the informer can add theirs.
const podNodeIndex = "nodelifecycle.spec.nodeName"

func addPodNodeIndex(inf cache.SharedIndexInformer) error {
	err := inf.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}})
	if err != nil {
		return fmt.Errorf("nodelifecycle: adding the pod index by node: %w", err)
	}
	return nil
}

// markPodsOfSilentNodes sets Ready=False on the pods of every node this controller has
// found silent and whose Ready condition is not True, so Services stop sending them
// traffic. A live node agent speaks for its own pods, so nodes that merely report
// NotReady are left to it.
func (c *Controller) markPodsOfSilentNodes(ctx context.Context, nodes []*v1.Node) {
	if c.podIndexer == nil {
		return
	}
	now := c.clock.Now()
	var pods []*v1.Pod
	for _, node := range nodes {
		if readyStatus(node) == v1.ConditionTrue {
			continue
		}
		c.mu.Lock()
		h, ok := c.nodes[node.Name]
		silent := ok && !decide(h, now, c.opts).healthy
		c.mu.Unlock()
		if !silent {
			continue
		}
		objs, err := c.podIndexer.ByIndex(podNodeIndex, node.Name)
		if err != nil {
			c.logger.Error("listing pods of node from the cache", "node", node.Name, "err", err)
			continue
		}
		for _, obj := range objs {
			pod, ok := obj.(*v1.Pod)
			if ok && podReady(pod) {
				pods = append(pods, pod)
			}
		}
	}
	// The pods of nodes that fell silent together are written concurrently, as the
	// nodes' conditions are (see statusWriteWorkers).
	workqueue.ParallelizeUntil(ctx, statusWriteWorkers, len(pods), func(i int) {
		pod := pods[i]
		if err := c.markPodNotReady(ctx, pod); err != nil {
			c.logger.Error("marking pod not Ready", "node", pod.Spec.NodeName, "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	})
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// markPodNotReady writes Ready=False through pods/status, fetching the pod again after
// a conflict. A pod that moved or went away is left alone.
func (c *Controller) markPodNotReady(ctx context.Context, pod *v1.Pod) error {
	nodeName := pod.Spec.NodeName
	refetch := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refetch {
			fresh, err := c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			pod = fresh
		}
		refetch = true
		if pod.Spec.NodeName != nodeName || !podReady(pod) {
			return nil
		}
		updated := pod.DeepCopy()
		for i := range updated.Status.Conditions {
			cond := &updated.Status.Conditions[i]
			if cond.Type == v1.PodReady {
				cond.Status = v1.ConditionFalse
				cond.Reason = reasonUnknown
				cond.Message = "the pod's node stopped posting status"
				cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
			}
		}
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			c.logger.Info("pod marked not Ready: its node is silent", "pod", pod.Namespace+"/"+pod.Name, "node", nodeName)
		}
		return err
	})
}
