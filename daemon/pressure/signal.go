package pressure

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Signal is an eviction signal in kubelet's vocabulary. Each is an amount still
// available (bytes, inodes or process IDs) measured against a capacity, and a
// threshold on it is crossed when the available amount drops below the threshold.
type Signal string

// The signals plinthd evaluates. allocatableMemory.available is memory available to
// pods: node allocatable memory minus the working set of the pods' cgroup.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodefsAvailable            Signal = "nodefs.available"
	SignalNodefsInodesFree           Signal = "nodefs.inodesFree"
	SignalImagefsAvailable           Signal = "imagefs.available"
	SignalImagefsInodesFree          Signal = "imagefs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// signalOrder is every known signal in the order eviction acts on them when several
// are crossed at once: memory first (it is the one the kernel OOM killer races for),
// then PIDs (fork failures break everything on the node), then disk.
var signalOrder = []Signal{
	SignalMemoryAvailable,
	SignalAllocatableMemoryAvailable,
	SignalPIDAvailable,
	SignalNodefsAvailable,
	SignalNodefsInodesFree,
	SignalImagefsAvailable,
	SignalImagefsInodesFree,
}

// KnownSignals returns every signal a threshold may name, in eviction order.
func KnownSignals() []Signal { return slices.Clone(signalOrder) }

// Known reports whether s is one of KnownSignals.
func (s Signal) Known() bool { return slices.Contains(signalOrder, s) }

// rank is the signal's place in eviction order; unknown signals sort last.
func (s Signal) rank() int {
	if i := slices.Index(signalOrder, s); i >= 0 {
		return i
	}
	return len(signalOrder)
}

// Condition is the node condition a crossed threshold on s sets to True.
func (s Signal) Condition() corev1.NodeConditionType {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return corev1.NodeMemoryPressure
	case SignalPIDAvailable:
		return corev1.NodePIDPressure
	default:
		return corev1.NodeDiskPressure
	}
}

// Resource is the resource that is starved when a threshold on s is crossed; pods are
// ranked for eviction by their use of it.
func (s Signal) Resource() Resource {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return ResourceMemory
	case SignalPIDAvailable:
		return ResourcePIDs
	case SignalNodefsInodesFree, SignalImagefsInodesFree:
		return ResourceInodes
	default:
		return ResourceEphemeralStorage
	}
}

// isBytes reports whether the signal is measured in bytes (else it is a count of
// inodes or process IDs).
func (s Signal) isBytes() bool {
	switch s {
	case SignalNodefsInodesFree, SignalImagefsInodesFree, SignalPIDAvailable:
		return false
	}
	return true
}

// unit names what the signal counts, for error messages.
func (s Signal) unit() string {
	switch s {
	case SignalNodefsInodesFree, SignalImagefsInodesFree:
		return "inodes"
	case SignalPIDAvailable:
		return "process IDs"
	}
	return "bytes"
}

// Resource is what a pod is ranked by when the node is short of it.
type Resource string

// Resources that can be starved.
const (
	ResourceMemory           Resource = "memory"
	ResourceEphemeralStorage Resource = "ephemeral-storage"
	ResourceInodes           Resource = "inodes"
	ResourcePIDs             Resource = "pids"
)

// pressureConditions are the conditions this package reports, in kubelet's order.
var pressureConditions = []corev1.NodeConditionType{
	corev1.NodeMemoryPressure,
	corev1.NodeDiskPressure,
	corev1.NodePIDPressure,
}
