package pressure

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SystemCriticalPriority is the lowest priority of a critical pod
// (system-cluster-critical is exactly this, system-node-critical above it).
const SystemCriticalPriority int32 = 2000000000

// Annotations that mark pods kubelet treats as critical whatever their priority: a
// static pod (from a file or URL, config.source other than "api") and the mirror pod
// the API holds for it.
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
)

// Pod is what the eviction policy knows of a pod on this node.
type Pod struct {
	Namespace, Name string
	UID             types.UID
	// Priority is spec.priority (0 when unset).
	Priority int32
	// Critical pods are never evicted; see IsCritical.
	Critical bool
	// Requests are the pod's effective requests; see PodRequests.
	Requests Usage
	// Usage is what the pod uses now, from its cgroup and volumes.
	Usage Usage
	// GracePeriod is the pod's own terminationGracePeriodSeconds (30 s when unset,
	// as the API defaults it), which evictionMaxPodGracePeriod caps for soft
	// evictions.
	GracePeriod time.Duration
}

// Usage is an amount of each resource the policy ranks by.
type Usage struct {
	MemoryBytes           int64
	EphemeralStorageBytes int64
	Inodes                int64
	Processes             int64
}

func (p Pod) String() string { return p.Namespace + "/" + p.Name }

// IsCritical reports whether kubelet would treat pod as critical: a static or mirror
// pod, or a priority of at least SystemCriticalPriority.
func IsCritical(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations[AnnotationConfigSource]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[AnnotationConfigMirror]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// PodFromAPI describes an API pod for the policy, with usage measured elsewhere.
func PodFromAPI(pod *corev1.Pod, usage Usage) Pod {
	p := Pod{
		Namespace:   pod.Namespace,
		Name:        pod.Name,
		UID:         pod.UID,
		Critical:    IsCritical(pod),
		Requests:    PodRequests(pod),
		Usage:       usage,
		GracePeriod: time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second,
	}
	if pod.Spec.Priority != nil {
		p.Priority = *pod.Spec.Priority
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		p.GracePeriod = time.Duration(*g) * time.Second
	}
	return p
}

// PodRequests is the memory and ephemeral storage a pod requests, as the scheduler
// counts it: pod-level requests when the pod sets them; otherwise the sum of its
// containers and sidecars (restartable init containers), or the largest need of an
// init container while it runs (its own request plus the sidecars started before it)
// when that is larger; plus the pod overhead.
func PodRequests(pod *corev1.Pod) Usage {
	if r := pod.Spec.Resources; r != nil && (hasRequest(r.Requests, corev1.ResourceMemory) || hasRequest(r.Requests, corev1.ResourceEphemeralStorage)) {
		u := usageOf(r.Requests)
		return add(u, usageOf(pod.Spec.Overhead))
	}
	var total, sidecars, initPeak Usage
	for _, c := range pod.Spec.Containers {
		total = add(total, usageOf(c.Resources.Requests))
	}
	for _, c := range pod.Spec.InitContainers {
		req := usageOf(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars = add(sidecars, req)
			initPeak = maxUsage(initPeak, sidecars)
			continue
		}
		initPeak = maxUsage(initPeak, add(sidecars, req))
	}
	return add(maxUsage(add(total, sidecars), initPeak), usageOf(pod.Spec.Overhead))
}

func hasRequest(l corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := l[name]
	return ok
}

func usageOf(l corev1.ResourceList) Usage {
	var u Usage
	if q, ok := l[corev1.ResourceMemory]; ok {
		u.MemoryBytes = q.Value()
	}
	if q, ok := l[corev1.ResourceEphemeralStorage]; ok {
		u.EphemeralStorageBytes = q.Value()
	}
	return u
}

func add(a, b Usage) Usage {
	return Usage{a.MemoryBytes + b.MemoryBytes, a.EphemeralStorageBytes + b.EphemeralStorageBytes,
		a.Inodes + b.Inodes, a.Processes + b.Processes}
}

func maxUsage(a, b Usage) Usage {
	return Usage{max(a.MemoryBytes, b.MemoryBytes), max(a.EphemeralStorageBytes, b.EphemeralStorageBytes),
		max(a.Inodes, b.Inodes), max(a.Processes, b.Processes)}
}

// Rank orders the pods to evict when the node is short of r, first to evict first.
// Critical pods are left out: they are never evicted. Kubelet's orders:
//
//   - memory and ephemeral-storage: pods using more than they request before those
//     within their requests, then lower priority first, then the larger excess of usage
//     over requests first (negative for pods within their requests, so the one furthest
//     below its requests goes last);
//   - inodes: no pod requests inodes, so pods using any before those using none, then
//     lower priority first, then more inodes first;
//   - pids: lower priority first, then more processes first.
//
// Ties keep a fixed order (namespace, then name), so the same pods rank the same way
// on every evaluation.
func Rank(pods []Pod, r Resource) []Pod {
	out := make([]Pod, 0, len(pods))
	for _, p := range pods {
		if !p.Critical && p.Priority < SystemCriticalPriority {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pod) int {
		ua, ub := a.Usage.of(r), b.Usage.of(r)
		ra, rb := a.Requests.of(r), b.Requests.of(r)
		if r != ResourcePIDs {
			if c := cmpBool(ua > ra, ub > rb); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(ub-rb, ua-ra); c != 0 { // larger excess first
			return c
		}
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// of is the usage of resource r; pods request no inodes or processes, so those
// requests are always 0.
func (u Usage) of(r Resource) int64 {
	switch r {
	case ResourceMemory:
		return u.MemoryBytes
	case ResourceEphemeralStorage:
		return u.EphemeralStorageBytes
	case ResourceInodes:
		return u.Inodes
	case ResourcePIDs:
		return u.Processes
	}
	return 0
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
