package bundle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func memResources(req, lim string) corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	if req != "" {
		r.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(req)}
	}
	if lim != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(lim)}
	}
	return r
}

func TestContainerSwapBytes(t *testing.T) {
	const gi = int64(1) << 30
	critical := int32(2000000000)
	high := int32(1999999999)
	for _, tc := range []struct {
		name               string
		behavior           string
		req, lim           string
		priority           *int32
		nodeMemory, nodeSw int64
		want               int64
	}{
		// 1 GiB of 16 GiB memory earns 1/16 of 8 GiB of swap.
		{"burstable share", LimitedSwap, "1Gi", "", nil, 16 * gi, 8 * gi, gi / 2},
		{"burstable with a higher limit", LimitedSwap, "1Gi", "2Gi", nil, 16 * gi, 8 * gi, gi / 2},
		{"rounded down", LimitedSwap, "1", "", nil, 3, 2, 0},
		{"rounded down 2", LimitedSwap, "2", "", nil, 3, 2, 1},
		{"no swap behaviour", NoSwap, "1Gi", "", nil, 16 * gi, 8 * gi, 0},
		{"guaranteed", LimitedSwap, "1Gi", "1Gi", nil, 16 * gi, 8 * gi, 0},
		{"best effort", LimitedSwap, "", "", nil, 16 * gi, 8 * gi, 0},
		{"memory request equals limit in a Burstable pod", LimitedSwap, "", "1Gi", nil, 16 * gi, 8 * gi, 0},
		{"critical pod", LimitedSwap, "1Gi", "", &critical, 16 * gi, 8 * gi, 0},
		{"just below critical", LimitedSwap, "1Gi", "", &high, 16 * gi, 8 * gi, gi / 2},
		{"no swap on the node", LimitedSwap, "1Gi", "", nil, 16 * gi, 0, 0},
		{"node memory unknown", LimitedSwap, "1Gi", "", nil, 0, 8 * gi, 0},
		// Terabytes overflow request × swap in int64; the result is still exact.
		{"large", LimitedSwap, "3Ti", "", nil, 4 << 40, 6 << 40, 4608 << 30},
		{"request above the node", LimitedSwap, "32Gi", "", nil, 16 * gi, 8 * gi, 8 * gi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := corev1.Container{Name: "c", Resources: memResources(tc.req, tc.lim)}
			if tc.name == "memory request equals limit in a Burstable pod" {
				// The CPU request without a limit keeps the pod Burstable.
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			}
			pod := testPod(c)
			pod.Spec.Priority = tc.priority
			if got := ContainerSwapBytes(pod, &pod.Spec.Containers[0], tc.behavior, tc.nodeMemory, tc.nodeSw); got != tc.want {
				t.Errorf("ContainerSwapBytes = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBuildSwapLimits(t *testing.T) {
	burstable := corev1.Container{Name: "app", Resources: memResources("256Mi", "512Mi")}
	unlimited := corev1.Container{Name: "app", Resources: memResources("256Mi", "")}
	const node, swap = 1 << 30, 1 << 29 // the container earns 256Mi/1Gi of 512Mi: 128Mi

	for _, tc := range []struct {
		name      string
		c         corev1.Container
		swap      Swap
		wantV2    string // memory.swap.max, "" for none
		wantMemsw int64  // Memory.Swap, 0 for none
	}{
		{"v2 NoSwap", burstable, Swap{Behavior: NoSwap, Unified: true, NodeSwapBytes: swap}, "0", 0},
		{"v2 NoSwap without a limit", unlimited, Swap{Behavior: NoSwap, Unified: true}, "0", 0},
		{"v2 LimitedSwap", burstable, Swap{Behavior: LimitedSwap, Unified: true, NodeSwapBytes: swap}, "134217728", 0},
		{"v1 NoSwap", burstable, Swap{Behavior: NoSwap, NodeSwapBytes: swap}, "", 512 << 20},
		{"v1 LimitedSwap", burstable, Swap{Behavior: LimitedSwap, NodeSwapBytes: swap}, "", 640 << 20},
		{"v1 without a limit", unlimited, Swap{Behavior: NoSwap}, "", 0},
		{"no swap accounting", burstable, Swap{}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(tc.c)
			in.NodeMemoryBytes, in.Swap = node, tc.swap
			r := mustBuild(t, in).Linux.Resources
			if got := r.Unified["memory.swap.max"]; got != tc.wantV2 {
				t.Errorf("memory.swap.max = %q, want %q", got, tc.wantV2)
			}
			var memsw int64
			if r.Memory != nil && r.Memory.Swap != nil {
				memsw = *r.Memory.Swap
			}
			if memsw != tc.wantMemsw {
				t.Errorf("memory.swap (memsw) = %d, want %d", memsw, tc.wantMemsw)
			}
		})
	}

	in := testInput(burstable)
	in.Swap.Behavior = "UnlimitedSwap"
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), `"UnlimitedSwap"`) || !strings.Contains(err.Error(), "spec.containers[0]") {
		t.Errorf("unknown behaviour: %v", err)
	}
}
