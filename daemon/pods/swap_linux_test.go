//go:build linux

package pods

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/pods/bundle"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

// swapAccounting needs cgroups that limit swap (v2 memory.swap.max, v1 memsw).
var swapAccounting = kerneltest.Feature{Name: "swap accounting", Probe: func() error {
	host, err := cgroup.DetectHost()
	if err != nil {
		return err
	}
	if r := features.HostSystem().SwapAccounting(host.Mode); !r.Available {
		return errors.New(r.Reason)
	}
	return nil
}}

// TestWorkerSwapLimits runs a LimitedSwap Burstable container through runc and reads
// its swap limit from inside: its request's share of the node's memory applied to the
// node's swap, on top of its memory limit on cgroup v1 (memsw), alone on v2.
func TestWorkerSwapLimits(t *testing.T) {
	e := newWorkerEnv(t)
	kerneltest.Require(t, swapAccounting)
	host, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	// 16 MiB of the node's 1 GiB earns 16 MiB of its 1 GiB of swap (the limit is a
	// number the kernel accepts whatever swap really exists).
	e.cfg.NodeMemoryBytes = 1 << 30
	e.cfg.Swap = bundle.Swap{Behavior: bundle.LimitedSwap, Unified: host.Mode == cgroup.Unified, NodeSwapBytes: 1 << 30}
	want := "50331648" // memsw: the 32 MiB limit plus 16 MiB of swap
	if host.Mode == cgroup.Unified {
		want = "16777216"
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "swap", Namespace: "ns", UID: types.UID("5a5a5a5a-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "app", Image: "busybox",
			Command: []string{"sh", "-c", "cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes /sys/fs/cgroup/memory.swap.max 2>/dev/null; echo done"},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
			},
		}}}}
	e.run(t, pod)
	e.until(t, 0, "app done", func(s corev1.PodStatus) bool {
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Terminated != nil
	})
	b, err := os.ReadFile(filepath.Join(e.cfg.LogsDir, "ns_swap_"+string(pod.UID), "app", "0.log"))
	if err != nil || !strings.Contains(string(b), "stdout F "+want+"\n") || !strings.Contains(string(b), "stdout F done") {
		t.Errorf("container log %q, %v: want its swap limit %s (%v cgroups)", b, err, want, host.Mode)
	}
}
