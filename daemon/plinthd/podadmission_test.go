package plinthd

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func gatePod(name string, cpu string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPodGateAdmitsOnceRefusesWhatDoesNotFitAndLetsDeletionsThrough(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}}}
	failed := map[string]corev1.PodStatus{}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	g := newPodGate(func(context.Context) *corev1.Node { return node },
		func(p *corev1.Pod, st corev1.PodStatus) { failed[p.Name] = st }, func() time.Time { return now })

	running := gatePod("running", "900m", now.Add(-time.Hour))
	running.Status.Phase = corev1.PodRunning
	older, newer := gatePod("older", "100m", now.Add(-time.Minute)), gatePod("newer", "100m", now)
	// First list: the running pod was admitted by an earlier plinthd and is not checked
	// again (it alone would use 900m of the 1 CPU); older fits in what is left, newer not.
	got := g.filter(context.Background(), []*corev1.Pod{newer, running, older}, true)
	if want := []string{"running", "older"}; len(got) != 2 || names(got)[0] != want[0] || names(got)[1] != want[1] {
		t.Errorf("admitted %v, want %v", names(got), want)
	}
	st, ok := failed["newer"]
	if !ok || st.Phase != corev1.PodFailed || st.Reason != "OutOfcpu" || st.Message == "" || st.StartTime == nil {
		t.Errorf("refused pod's status %+v (written %v), want Failed with reason OutOfcpu and a message", st, ok)
	}
	if _, ok := failed["older"]; ok || len(failed) != 1 {
		t.Errorf("statuses written for %v, want only newer's", failed)
	}

	// Later lists: the refused pod stays out and is not refused again; once deleted it is
	// passed on so its deletion can be confirmed; admitted pods are not checked again
	// even when the node has shrunk.
	node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("100m")
	delete(failed, "newer")
	got = g.filter(context.Background(), []*corev1.Pod{newer, running, older}, false)
	if len(got) != 2 || len(failed) != 0 {
		t.Errorf("second list: admitted %v, refusals written %v", names(got), failed)
	}
	deleted := newer.DeepCopy()
	deleted.DeletionTimestamp = &metav1.Time{Time: now}
	got = g.filter(context.Background(), []*corev1.Pod{deleted, running, older}, false)
	if len(got) != 3 {
		t.Errorf("with the refused pod deleted: %v, want it passed on with the others", names(got))
	}

	// Without the Node every new pod is refused.
	g.node = func(context.Context) *corev1.Node { return nil }
	got = g.filter(context.Background(), []*corev1.Pod{running, older, gatePod("late", "1m", now)}, false)
	if len(got) != 2 || failed["late"].Reason == "" {
		t.Errorf("without the node: admitted %v, late's status %+v", names(got), failed["late"])
	}
}
