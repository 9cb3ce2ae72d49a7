package plinthd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
	"github.com/plinth/plinth/daemon/staticpods"
)

// countVerbs counts the pod requests by verb ("get", "update" for status writes).
func countVerbs(cs *fake.Clientset) map[string]int {
	n := map[string]int{}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "pods" {
			n[a.GetVerb()]++
		}
	}
	return n
}

// A pod's first status write reads it; later writes start from what the previous one
// returned (one request each) until a conflict, which reads the pod afresh and writes
// again, keeping the condition someone else added meanwhile.
func TestPodStatusWriterReadsOnlyFirstAndAfterAConflict(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: "1"},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	cs := fake.NewClientset(pod)
	// The fake's tracker keeps resourceVersions as written: this one checks and
	// advances them as the control service does.
	conflicts, version := 0, 1
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).DeepCopy()
		stored, err := cs.Tracker().Get(a.GetResource(), "default", "web")
		if err != nil {
			return true, nil, err
		}
		if obj.ResourceVersion != stored.(*corev1.Pod).ResourceVersion {
			conflicts++
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "web", nil)
		}
		version++
		obj.ResourceVersion = strconv.Itoa(version)
		return true, obj, cs.Tracker().Update(a.GetResource(), obj, "default")
	})
	w := newPodStatusWriter(nodeclienttest.FromClientset(cs), slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.track([]*corev1.Pod{pod})
	ctx := context.Background()
	ref := podRef{Namespace: "default", Name: "web"}

	if err := w.write(ctx, "u1", ref, corev1.PodStatus{Phase: corev1.PodPending}); err != nil {
		t.Fatal(err)
	}
	if err := w.write(ctx, "u1", ref, corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	if got := countVerbs(cs); got["get"] != 1 || got["update"] != 2 {
		t.Errorf("two writes made %v requests, want 1 get and 2 updates", got)
	}

	// Someone else adds a condition; the next write, from the stale copy, conflicts.
	cur, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{Type: "example.com/gate", Status: corev1.ConditionTrue})
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	if err := w.write(ctx, "u1", ref, corev1.PodStatus{Phase: corev1.PodSucceeded}); err != nil {
		t.Fatal(err)
	}
	if got := countVerbs(cs); conflicts != 1 || got["get"] != 1 || got["update"] != 2 {
		t.Errorf("a write from a stale copy made %v requests with %d conflicts, want a conflict, 1 get and 2 updates", got, conflicts)
	}
	final, err := cs.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gate := false
	for _, c := range final.Status.Conditions {
		gate = gate || c.Type == "example.com/gate"
	}
	if final.Status.Phase != corev1.PodSucceeded || !gate {
		t.Errorf("after the retried write: phase %s, conditions %+v; want Succeeded with the other writer's condition kept", final.Status.Phase, final.Status.Conditions)
	}
}

// gatedPods holds every status write until `want` are in flight together (or 10 s
// pass, when the write fails), to show that writes overlap.
type gatedPods struct {
	nodeclient.Interface
	mu        sync.Mutex
	inFlight  int
	most      int
	want      int
	allInside chan struct{}
}

type gatedPodClient struct {
	nodeclient.PodClient
	g *gatedPods
}

func (g *gatedPods) Pods(ns string) nodeclient.PodClient {
	return gatedPodClient{g.Interface.Pods(ns), g}
}

func (c gatedPodClient) UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	g := c.g
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want {
		close(g.allInside)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.allInside:
		return c.PodClient.UpdateStatus(ctx, pod, opts)
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("status write of %s: only %d in flight together", pod.Name, g.most)
	}
}

// A burst of pod starts is written several pods at a time, not one after another.
func TestPodStatusWriterWritesPodsConcurrently(t *testing.T) {
	const pods = statusWritesInFlight
	var objs []runtime.Object
	var list []*corev1.Pod
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("u%d", i))}}
		objs, list = append(objs, p), append(list, p)
	}
	g := &gatedPods{Interface: nodeclienttest.FromClientset(fake.NewClientset(objs...)), want: pods, allInside: make(chan struct{})}
	w := newPodStatusWriter(g, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.track(list)
	for _, p := range list {
		w.report(p, corev1.PodStatus{Phase: corev1.PodRunning})
	}
	if failed := w.flush(context.Background()); failed {
		t.Fatalf("flush failed: at most %d writes were in flight together, want %d", g.most, pods)
	}
	if len(w.pending) != 0 || len(w.written) != pods {
		t.Errorf("after flush: %d pending, %d written; want 0 and %d", len(w.pending), len(w.written), pods)
	}
}

// A static pod's status reported before its mirror pod exists stays queued and reaches
// the mirror pod once MirrorPods has created it (it was dropped as "pod gone" before,
// and the mirror pod stayed Pending).
func TestStaticPodStatusWaitsForItsMirrorPod(t *testing.T) {
	static := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1", Namespace: "kube-system", UID: "hash1",
		Annotations: map[string]string{staticpods.AnnotationConfigSource: staticpods.SourceFile}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	cs := fake.NewClientset()
	w := newPodStatusWriter(nodeclienttest.FromClientset(cs), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	w.report(static, corev1.PodStatus{Phase: corev1.PodRunning})
	if failed := w.flush(ctx); !failed {
		t.Fatal("a status for a mirror pod that does not exist yet counted as written")
	}
	mirror := static.DeepCopy()
	mirror.UID = "mirror-uid"
	mirror.Annotations[staticpods.AnnotationConfigMirror] = "hash1"
	if _, err := cs.CoreV1().Pods("kube-system").Create(ctx, mirror, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if failed := w.flush(ctx); failed {
		t.Fatal("the status write failed once the mirror pod existed")
	}
	got, err := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("mirror pod phase %q, want the static pod's Running", got.Status.Phase)
	}
}
