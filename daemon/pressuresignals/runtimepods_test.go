package pressuresignals

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/cgroup"
)

// writePodCgroup makes a fixture v2 pod cgroup <root><parent>/pod<uid> using
// workingSet bytes of memory (plus inactive file pages, which do not count) and tasks.
func writePodCgroup(t *testing.T, root, parent, uid string, workingSet, tasks uint64) {
	t.Helper()
	dir := filepath.Join(root, parent, "pod"+uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const inactiveFile = 8 << 20
	for name, body := range map[string]string{
		"memory.current": fmt.Sprint(workingSet + inactiveFile),
		"memory.stat":    fmt.Sprintf("anon %d\ninactive_file %d\n", workingSet, inactiveFile),
		"memory.max":     "max",
		"pids.current":   fmt.Sprint(tasks),
		"pids.max":       "max",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func withMemoryRequest(q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}}}}
	}
}

// The runtime's pods with their cgroups' usage: the BestEffort pod using less memory
// than the Burstable one still ranks first, because it uses more than it requests
// (nothing) and the Burstable one stays within its request, as kubelet ranks them.
func TestRuntimePodsListsRunningPodsWithTheirCgroupUsage(t *testing.T) {
	root, parent := t.TempDir(), "/plinth"
	writePodCgroup(t, root, parent, "u-be", 30<<20, 3)
	writePodCgroup(t, root, parent, "u-burst", 120<<20, 7)
	running := []*corev1.Pod{
		apiPod("default", "besteffort", "u-be", "n1"),
		apiPod("default", "burstable", "u-burst", "n1", withMemoryRequest("200Mi")),
		apiPod("default", "nocgroup", "u-none", "n1"), // just started: no cgroup yet
	}
	r := RuntimePods{Running: func() []*corev1.Pod { return running }, Cgroups: &cgroup.Host{Mode: cgroup.Unified, Root: root},
		Parent: parent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pressure.Usage{
		"default/besteffort": {MemoryBytes: 30 << 20, Processes: 3},
		"default/burstable":  {MemoryBytes: 120 << 20, Processes: 7},
		"default/nocgroup":   {},
	}
	if len(got) != len(want) {
		t.Fatalf("List = %+v; want %d pods", got, len(want))
	}
	for _, p := range got {
		if w, ok := want[p.String()]; !ok || p.Usage != w {
			t.Errorf("%s: usage %+v, want %+v", p, p.Usage, w)
		}
	}
	if ranked := pressure.Rank(got, pressure.ResourceMemory); ranked[0].Name != "besteffort" {
		t.Errorf("memory ranking %v; want the BestEffort pod first", ranked)
	}
}

// Before the runtime runs any pod there is nothing to evict, whatever the API binds to
// the node.
func TestRuntimePodsWithoutRunningPodsListsNone(t *testing.T) {
	r := RuntimePods{Running: func() []*corev1.Pod { return nil }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got, err := r.List(context.Background())
	if err != nil || len(got) != 0 {
		t.Errorf("List = %v, %v; want no pods", got, err)
	}
}
