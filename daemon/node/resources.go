package node

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// capacityResources are the resources this package reports and so the only ones it
// compares and overwrites in a Node's capacity and allocatable; any others (extended
// resources someone else manages) are left alone.
var capacityResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage,
}

// nodeCapacity is what the machine has.
func nodeCapacity(f HostFacts, maxPods int32) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(f.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(clampInt64(f.MemoryBytes), resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(clampInt64(f.EphemeralStorageBytes), resource.BinarySI),
	}
}

// nodeAllocatable is capacity minus every reservation, never below zero: a
// reservation larger than the machine leaves nothing for pods rather than a negative
// quantity the scheduler would misread.
func nodeAllocatable(capacity corev1.ResourceList, reserved ...corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(capacity))
	for name, c := range capacity {
		q := c.DeepCopy()
		for _, r := range reserved {
			if v, ok := r[name]; ok {
				q.Sub(v)
			}
		}
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, c.Format)
		}
		out[name] = q
	}
	return out
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// mergeResources writes want's entries for capacityResources into have (allocating it
// when nil) and reports whether any value differed.
func mergeResources(have *corev1.ResourceList, want corev1.ResourceList) bool {
	if *have == nil {
		*have = corev1.ResourceList{}
	}
	changed := false
	for _, name := range capacityResources {
		w, ok := want[name]
		if !ok {
			continue
		}
		if h, ok := (*have)[name]; ok && h.Cmp(w) == 0 {
			continue
		}
		(*have)[name] = w.DeepCopy()
		changed = true
	}
	return changed
}
