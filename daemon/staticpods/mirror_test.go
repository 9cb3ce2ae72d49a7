package staticpods

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

func testNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-a-uid"}}
}

func staticPods(t *testing.T, manifests map[string]string) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for file, data := range manifests {
		out = append(out, decodeDefaulted(t, file, "node-a", data))
	}
	return out
}

func boundPod(ns, name, node string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

// writes lists the create and delete actions on pods, as "verb ns/name".
func writes(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			p := a.GetObject().(*corev1.Pod)
			out = append(out, "create "+p.Namespace+"/"+p.Name)
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetNamespace()+"/"+a.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func newTestMirrors(t *testing.T, objects ...runtime.Object) (*MirrorPods, *fake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	cs := fake.NewClientset(objects...)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	m, err := NewMirrorPods(MirrorConfig{Client: nodeclienttest.FromClientset(cs), NodeName: "node-a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return m, cs, clk
}

func TestMirrorPodsSync(t *testing.T) {
	ctx := context.Background()
	pods := staticPods(t, map[string]string{"/m/etcd.yaml": etcdYAML, "/m/web.json": webJSON})
	var etcd, web *corev1.Pod
	for _, p := range pods {
		if p.Name == "etcd-node-a" {
			etcd = p
		} else {
			web = p
		}
	}
	m, cs, _ := newTestMirrors(t,
		testNode(),
		boundPod("default", "web-node-a", "node-a", map[string]string{AnnotationConfigMirror: "an-older-hash"}),
		boundPod("default", "gone-node-a", "node-a", map[string]string{AnnotationConfigMirror: "h"}),
		boundPod("default", "app", "node-a", nil),
		boundPod("default", "x-node-b", "node-b", map[string]string{AnnotationConfigMirror: "h"}),
	)

	// Until the static pods are known, nothing is deleted.
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs); len(w) != 0 {
		t.Fatalf("before the first static pod set: %v", w)
	}

	m.SetStaticPods(pods)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"create default/web-node-a", "create kube-system/etcd-node-a", "delete default/gone-node-a", "delete default/web-node-a"}
	if w := writes(cs); !slices.Equal(w, want) {
		t.Fatalf("writes %v, want %v", w, want)
	}
	got, err := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[AnnotationConfigMirror] != string(etcd.UID) || got.Spec.NodeName != "node-a" || got.UID == etcd.UID {
		t.Errorf("mirror pod %+v, want config.mirror %s, bound to node-a, without the static pod's UID", got.ObjectMeta, etcd.UID)
	}
	if o := got.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].UID != "node-a-uid" || o[0].Controller == nil || !*o[0].Controller {
		t.Errorf("owner references %+v, want the Node as controller", o)
	}
	if w, _ := cs.CoreV1().Pods("default").Get(ctx, "web-node-a", metav1.GetOptions{}); w.Annotations[AnnotationConfigMirror] != string(web.UID) {
		t.Errorf("web's mirror carries hash %q, want %s", w.Annotations[AnnotationConfigMirror], web.UID)
	}
	for _, kept := range []string{"app", "x-node-b"} {
		if _, err := cs.CoreV1().Pods("default").Get(ctx, kept, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v, want it left alone", kept, err)
		}
	}

	// Idempotent: a second pass changes nothing.
	cs.ClearActions()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs); len(w) != 0 {
		t.Errorf("second pass wrote %v", w)
	}

	// A mirror pod being deleted while its static pod exists is finished and made again.
	dying, _ := cs.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{})
	now := metav1.Now()
	dying.DeletionTimestamp = &now
	if _, err := cs.CoreV1().Pods("kube-system").Update(ctx, dying, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs); !slices.Equal(w, []string{"create kube-system/etcd-node-a", "delete kube-system/etcd-node-a"}) {
		t.Errorf("a deleting mirror pod: writes %v", w)
	}

	// No static pods: every mirror pod of this node goes, nothing else.
	cs.ClearActions()
	m.SetStaticPods(nil)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(cs); !slices.Equal(w, []string{"delete default/web-node-a", "delete kube-system/etcd-node-a"}) {
		t.Errorf("static pods gone: writes %v", w)
	}
}

func TestMirrorPodsNameTakenByAnOrdinaryPod(t *testing.T) {
	m, cs, _ := newTestMirrors(t, testNode(), boundPod("default", "web-node-a", "node-a", nil))
	m.SetStaticPods(staticPods(t, map[string]string{"/m/web.json": webJSON}))
	err := m.Sync(context.Background())
	if err == nil || !errorContains(err, "is not a mirror pod") {
		t.Fatalf("Sync: %v, want an error saying the name is taken by a pod that is not a mirror", err)
	}
	if w := writes(cs); len(w) != 0 {
		t.Errorf("writes %v, want the ordinary pod left alone", w)
	}
}

func errorContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// Run: an update is acted on at once, a mirror pod deleted behind its back comes back
// at the next resync, and a failed pass is retried after 1 s rather than the period.
func TestMirrorPodsRun(t *testing.T) {
	m, cs, clk := newTestMirrors(t, testNode())
	passes := make(chan error, 10)
	m.afterSync = func(err error) { passes <- err }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	pass := func() error {
		t.Helper()
		select {
		case err := <-passes:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reconcile pass")
			return nil
		}
	}

	m.SetStaticPods(staticPods(t, map[string]string{"/m/web.json": webJSON}))
	if err := pass(); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Get(ctx, "web-node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("mirror pod after the update: %v", err)
	}

	if err := pods.Delete(ctx, "web-node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(DefaultMirrorResyncPeriod)
	if err := pass(); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "web-node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("mirror pod after a resync: %v", err)
	}

	// The API refuses the next create once.
	refused := false
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused {
			return false, nil, nil
		}
		refused = true
		return true, nil, apierrors.NewServiceUnavailable("etcd is electing")
	})
	if err := pods.Delete(ctx, "web-node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m.Resync()
	if err := pass(); !errorContains(err, "create mirror pod default/web-node-a: etcd is electing") {
		t.Fatalf("pass with a refused create: %v, want the API's error", err)
	}
	clk.Step(mirrorRetryInitial)
	if err := pass(); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := pods.Get(ctx, "web-node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("mirror pod after the retry: %v", err)
	}
}
