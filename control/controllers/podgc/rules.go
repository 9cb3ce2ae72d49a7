package podgc

import (
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The rules are pure functions of the cached pods and nodes (and, for orphans, of the
// quarantine), so each is tested on its own.

func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// evicted is kubelet's mark on a pod it evicted under node pressure.
func evicted(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "Evicted"
}

// waitingOnFinalizers is a terminal pod whose deletion went through with grace 0 and
// that only its finalizers hold: a force delete would change nothing.
func waitingOnFinalizers(pod *v1.Pod) bool {
	g := pod.DeletionGracePeriodSeconds
	return pod.DeletionTimestamp != nil && g != nil && *g == 0 && len(pod.Finalizers) > 0 && terminal(pod)
}

// oldestFirst orders pods as they are deleted: pods kubelet evicted first (they are
// the least useful to anyone reading them), then by creation time, name and namespace.
func oldestFirst(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		if ea, eb := evicted(a), evicted(b); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace, b.Namespace)
	})
}

// terminatedOverThreshold is the terminated pods beyond threshold, oldest first; none
// when threshold is 0.
func terminatedOverThreshold(pods []*v1.Pod, threshold int) []*v1.Pod {
	if threshold <= 0 {
		return nil
	}
	var done []*v1.Pod
	for _, p := range pods {
		if terminal(p) && !waitingOnFinalizers(p) {
			done = append(done, p)
		}
	}
	if len(done) <= threshold {
		return nil
	}
	oldestFirst(done)
	return done[:len(done)-threshold]
}

// nodeReady is Ready=True; a node without the condition is not Ready.
func nodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func outOfService(node *v1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == v1.TaintNodeOutOfService {
			return true
		}
	}
	return false
}

// terminatingOnOutOfServiceNodes is the terminating pods of nodes that are not Ready
// and tainted out-of-service (with any effect, as Kubernetes checks only the key),
// oldest first. node looks a node up in the cache.
func terminatingOnOutOfServiceNodes(pods []*v1.Pod, node func(name string) (*v1.Node, bool)) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" || waitingOnFinalizers(p) {
			continue
		}
		if n, ok := node(p.Spec.NodeName); ok && !nodeReady(n) && outOfService(n) {
			out = append(out, p)
		}
	}
	oldestFirst(out)
	return out
}

// unscheduledTerminating is the terminating pods bound to no node, oldest first.
func unscheduledTerminating(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" && !waitingOnFinalizers(p) {
			out = append(out, p)
		}
	}
	oldestFirst(out)
	return out
}

// quarantine remembers since when each node name that pods are bound to has been
// missing from the node cache.
type quarantine struct {
	since map[string]time.Time
}

// update records names newly missing at now and forgets names that are back in the
// cache or that no pod is bound to any more. It returns the names quarantined for at
// least d, sorted: those a live read must now confirm.
func (q *quarantine) update(pods []*v1.Pod, inCache func(name string) bool, now time.Time, d time.Duration) []string {
	missing := make(map[string]bool)
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" && !waitingOnFinalizers(p) && !inCache(n) {
			missing[n] = true
		}
	}
	for name := range q.since {
		if !missing[name] {
			delete(q.since, name)
		}
	}
	var due []string
	for name := range missing {
		since, ok := q.since[name]
		if !ok {
			q.since[name] = now
			continue
		}
		if now.Sub(since) >= d {
			due = append(due, name)
		}
	}
	slices.Sort(due)
	return due
}

// restart gives name a fresh quarantine from now: a live read found the node, so the
// cache is only behind.
func (q *quarantine) restart(name string, now time.Time) { q.since[name] = now }

// podsOn is the pods bound to the named nodes, oldest first.
func podsOn(pods []*v1.Pod, nodes map[string]bool) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if nodes[p.Spec.NodeName] && !waitingOnFinalizers(p) {
			out = append(out, p)
		}
	}
	oldestFirst(out)
	return out
}
