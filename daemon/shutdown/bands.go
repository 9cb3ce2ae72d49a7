package shutdown

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Band is one priority band: the pods whose priority is at least Priority, and below
// the next band's, get GracePeriod to stop.
type Band struct {
	Priority    int32
	GracePeriod time.Duration
}

// Group is a band with the pods that fall in it.
type Group struct {
	Band
	Pods []*corev1.Pod
}

// builtinPriorities are the priorities of the two system priority classes. A pod that
// names one but carries no spec.priority (the control service need not run priority
// admission) still counts as critical.
var builtinPriorities = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// PodPriority is the priority graceful shutdown sorts pod by: spec.priority, else its
// built-in priority class's, else 0 (the priority of a pod without a class when no
// default class exists).
func PodPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return builtinPriorities[pod.Spec.PriorityClassName]
}

// Plan puts each pod in its band: the highest band whose priority is at most the
// pod's; a pod below every band goes to the lowest. The groups come back lowest
// priority first, the order they are stopped in, empty ones included (Run skips them:
// an empty band costs no time). bands need not be sorted.
func Plan(bands []Band, pods []*corev1.Pod) []Group {
	groups := make([]Group, len(bands))
	for i, b := range bands {
		groups[i].Band = b
	}
	slices.SortFunc(groups, func(a, b Group) int { return cmp.Compare(a.Priority, b.Priority) })
	if len(groups) == 0 {
		return nil
	}
	for _, p := range pods {
		prio := PodPriority(p)
		// The first band above the pod's priority; the pod belongs to the one before.
		i, _ := slices.BinarySearchFunc(groups, prio, func(g Group, p int32) int {
			if g.Priority <= p {
				return -1
			}
			return 1
		})
		i = max(i-1, 0)
		groups[i].Pods = append(groups[i].Pods, p)
	}
	return groups
}

// TotalGracePeriod is the time all bands take at most: how long the inhibitor lock may
// have to delay the shutdown.
func TotalGracePeriod(bands []Band) time.Duration {
	var sum time.Duration
	for _, b := range bands {
		sum += b.GracePeriod
	}
	return sum
}

// podGracePeriod is the time one pod of band b gets: the band's, or the pod's own
// terminationGracePeriodSeconds when that is shorter, as kubelet does.
func podGracePeriod(b Band, pod *corev1.Pod) time.Duration {
	grace := b.GracePeriod
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil && time.Duration(*s)*time.Second < grace {
		grace = max(time.Duration(*s)*time.Second, 0)
	}
	return grace
}
