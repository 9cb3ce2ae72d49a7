package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// The memory scenario: the pods cgroup is a test cgroup limited to evictPodsLimit, so
// nothing here can take more of the shared machine than that, and
// allocatableMemory.available (the limit minus the cgroup's working set) is the signal.
// The Burstable pod holds keeperMiB within its 200Mi request; the BestEffort pod,
// once told to, holds hogMiB, less than the Burstable pod: available memory falls from
// about 180Mi to about 80Mi, below the 128Mi threshold, and rises back above it once
// the BestEffort pod is gone.
const (
	evictPodsLimit = 320 << 20
	evictThreshold = "128Mi"
	keeperMiB      = 140
	hogMiB         = 100
)

// holdMemory is a shell command that keeps n MiB of anonymous memory for good: dd
// fills one n MiB block from /dev/zero, then blocks writing it to a pipe nobody reads.
func holdMemory(n int) string {
	return fmt.Sprintf("busybox dd if=/dev/zero bs=%dM count=1 2>/dev/null | sleep 1000000", n)
}

// A memory-pressure scenario evicts the BestEffort pod first: with a Burstable pod and
// a BestEffort pod both running, the BestEffort one starts holding memory until the
// pods cgroup crosses its allocatableMemory.available threshold. plinthd evicts the
// BestEffort pod, although it uses less memory than the Burstable one, because it uses
// more than it requests (nothing) while the other stays within its request, as kubelet
// ranks them. The evicted pod ignores SIGTERM and asks for a 60 s grace period, yet it
// is gone within seconds (a hard threshold stops pods at once); it ends Failed with
// reason Evicted and a message naming the resource and the threshold. The Burstable
// pod keeps running, since the pressure is gone with the BestEffort pod.
func TestMemoryPressureEvictsTheBestEffortPodFirst(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	image := reg.PushBusybox(t, "e2e/busybox:v1", "/bin/sh")
	pods := cgrouptest.New(t, cgrouptest.Options{MemoryLimit: evictPodsLimit})
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNodeWith(t, c, podNodeOptions{cgroupBase: pods.Path(), extraConfig: fmt.Sprintf(
		"podsCgroup: %s\nevictionHard:\n  allocatableMemory.available: %s\n", pods.Path(), evictThreshold)})
	n.start(t)
	trigger := t.TempDir()

	apply(t, c.kubeconfig, podManifest("keeper", image, "", `    resources:
      requests: {memory: 200Mi}
`, "sh", "-c", holdMemory(keeperMiB)))
	apply(t, c.kubeconfig, podManifest("besteffort", image, fmt.Sprintf(`  terminationGracePeriodSeconds: 60
  volumes: [{name: trigger, hostPath: {path: %s}}]
`, trigger), `    volumeMounts: [{name: trigger, mountPath: /trigger}]
`, "sh", "-c", "trap '' TERM; while [ ! -e /trigger/go ]; do sleep 0.2; done; "+holdMemory(hogMiB)))

	// Both pods run before there is any pressure: eviction chooses among the pods the
	// node runs, and none has been chosen yet.
	var keeper podStatus
	for _, name := range []string{"keeper", "besteffort"} {
		eventually(t, 60*time.Second, name+" Running", func() (bool, string) {
			if n.proc.exited() {
				t.Fatalf("plinthd exited: %v", n.proc.err)
			}
			p, seen := getPod(t, c.kubeconfig, name)
			if name == "keeper" {
				keeper = p
			}
			return p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].State.Running != nil, seen
		})
	}
	workingSet := func() (uint64, string) {
		m, err := pods.Host().Memory(pods.Path())
		if err != nil {
			return 0, err.Error()
		}
		return m.WorkingSetBytes, fmt.Sprintf("%d MiB", m.WorkingSetBytes>>20)
	}
	eventually(t, 30*time.Second, fmt.Sprintf("the keeper's %d MiB in the pods cgroup", keeperMiB), func() (bool, string) {
		ws, seen := workingSet()
		return ws >= keeperMiB<<20, seen
	})
	if p, seen := getPod(t, c.kubeconfig, "besteffort"); p.Status.Phase != "Running" {
		t.Fatalf("besteffort is no longer running before any pressure: %s", seen)
	}

	if err := os.WriteFile(filepath.Join(trigger, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var evicted podStatus
	eventually(t, 60*time.Second, "besteffort Failed with reason Evicted", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "besteffort")
		evicted = p
		return p.Status.Phase == "Failed" && p.Status.Reason == "Evicted", seen
	})
	took := time.Since(began)
	t.Logf("besteffort evicted and stopped %s after it began holding memory: %s", took.Round(time.Millisecond), evicted.Status.Message)
	if msg := evicted.Status.Message; !strings.Contains(msg, "The node was low on resource: memory.") ||
		!strings.Contains(msg, "Threshold quantity: "+evictThreshold) {
		t.Errorf("eviction message %q does not name the resource and the threshold", msg)
	}
	if cs := evicted.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil {
		t.Errorf("the evicted pod's container is not terminated: %+v", cs)
	}
	// The bound is the feature: a pod evicted for a hard threshold gets 1 s, not the
	// 60 s it asks for, and it ignores SIGTERM.
	if took > 30*time.Second {
		t.Errorf("besteffort took %s to be evicted and stopped; its own 60s grace period was used", took)
	}
	if p, _ := getPod(t, c.kubeconfig, "besteffort"); p.Metadata.UID != evicted.Metadata.UID {
		t.Error("the evicted pod was deleted; it stays in the API as Failed")
	}

	// The pressure went with the BestEffort pod, so the Burstable pod keeps running
	// through several evaluations (one a second) after the eviction.
	eventually(t, 30*time.Second, "the pods cgroup back above the threshold", func() (bool, string) {
		ws, seen := workingSet()
		return ws < evictPodsLimit-128<<20, seen
	})
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		p, seen := getPod(t, c.kubeconfig, "keeper")
		if p.Status.Phase != "Running" || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil ||
			p.Status.ContainerStatuses[0].ContainerID != keeper.Status.ContainerStatuses[0].ContainerID {
			t.Fatalf("the Burstable pod did not keep running after the BestEffort pod's eviction: %s", seen)
		}
	}
}
