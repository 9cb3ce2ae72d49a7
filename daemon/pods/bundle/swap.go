package bundle

import (
	"fmt"
	"math/big"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/internal/podqos"
)

// Swap behaviours, as kubelet's memorySwap.swapBehavior names them.
const (
	NoSwap      = "NoSwap"
	LimitedSwap = "LimitedSwap"
)

// criticalPriority is the priority of system-cluster-critical; pods at or above it get
// no swap under LimitedSwap, as in kubelet.
const criticalPriority = 2000000000

// Swap says how a container's swap is limited.
type Swap struct {
	// Behavior is NoSwap or LimitedSwap; "" sets no swap limit at all (a host whose
	// cgroups cannot account swap).
	Behavior string
	// Unified says the container's memory cgroup is cgroup v2, where memory.swap.max
	// limits swap alone. On v1 the memory+swap limit (memsw) is set instead, which
	// only exists alongside a memory limit.
	Unified bool
	// NodeSwapBytes is the swap the node's pods share (the swap areas' total): the
	// pool LimitedSwap divides.
	NodeSwapBytes int64
}

// ContainerSwapBytes is the swap a container may use beyond its memory under
// behavior, given the node's memory and the swap its pods share. NoSwap gives none.
// LimitedSwap gives Burstable containers their memory request's share of the node's
// memory, applied to the swap: request / nodeMemory × nodeSwap, rounded down. Pods that
// are not Burstable, critical pods (priority 2000000000 and up) and containers without
// a memory request, or whose memory limit equals the request, get none.
func ContainerSwapBytes(pod *corev1.Pod, c *corev1.Container, behavior string, nodeMemory, nodeSwap int64) int64 {
	if behavior != LimitedSwap || nodeMemory <= 0 || nodeSwap <= 0 {
		return 0
	}
	if podqos.Class(pod) != corev1.PodQOSBurstable {
		return 0
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority >= criticalPriority {
		return 0
	}
	req, ok := c.Resources.Requests[corev1.ResourceMemory]
	if !ok || req.Sign() <= 0 {
		return 0
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && lim.Cmp(req) == 0 {
		return 0
	}
	// Exact: request × swap overflows int64 for terabytes of each.
	share := new(big.Int).Mul(big.NewInt(req.Value()), big.NewInt(nodeSwap))
	share.Quo(share, big.NewInt(nodeMemory))
	if !share.IsInt64() || share.Int64() > nodeSwap {
		return nodeSwap // a request above the node's memory cannot earn more than all the swap
	}
	return share.Int64()
}

// applySwap sets the container's swap limit in r.
func applySwap(in Input, r *specs.LinuxResources, field string) error {
	switch in.Swap.Behavior {
	case "":
		return nil
	case NoSwap, LimitedSwap:
	default:
		return fmt.Errorf("%s: swap behaviour %q: want %s or %s", field, in.Swap.Behavior, NoSwap, LimitedSwap)
	}
	swap := ContainerSwapBytes(in.Pod, in.Container, in.Swap.Behavior, in.NodeMemoryBytes, in.Swap.NodeSwapBytes)
	if in.Swap.Unified {
		// runc writes Unified entries as they are; memory.swap.max=0 keeps the
		// container off swap whether or not it has a memory limit.
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		r.Unified["memory.swap.max"] = strconv.FormatInt(swap, 10)
		return nil
	}
	// v1: memsw is memory plus swap, so it equals the memory limit for no swap. A
	// container without a memory limit cannot have its swap bounded on v1
	// (daemon/preflight warns about that case).
	if r.Memory != nil && r.Memory.Limit != nil {
		r.Memory.Swap = ptr(*r.Memory.Limit + swap)
	}
	return nil
}
