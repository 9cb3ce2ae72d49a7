package staticpods

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/controlclient/nodeclient"
)

// Against the real API (registry, etcd): mirror pods owned by the Node are accepted,
// come back when deleted (also gracefully, with a deletionTimestamp), are replaced
// when the static pod changes and removed when it goes; other pods are never touched.
func TestMirrorPodsAgainstTheAPI(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := s.Client
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, boundPod("default", "app", "node-a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := nodeclient.New(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMirrorPods(MirrorConfig{Client: client, NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	sync := func() {
		t.Helper()
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mirror := func() *corev1.Pod {
		t.Helper()
		p, err := admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("mirror pod: %v", err)
		}
		return p
	}

	etcd := decodeDefaulted(t, "/etc/plinth/manifests/etcd.yaml", "node-a", etcdYAML)
	m.SetStaticPods([]*corev1.Pod{etcd})
	sync()
	first := mirror()
	if first.Annotations[AnnotationConfigMirror] != string(etcd.UID) || first.OwnerReferences[0].UID != node.UID ||
		first.Spec.NodeName != "node-a" || first.Spec.Priority == nil || *first.Spec.Priority != 2000001000 {
		t.Fatalf("stored mirror pod: %+v %+v", first.ObjectMeta, first.Spec)
	}

	// Deleted outright: back with a new UID.
	if err := admin.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-a", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	sync()
	second := mirror()
	if second.UID == first.UID {
		t.Fatal("the mirror pod was not recreated")
	}

	// Deleted gracefully (kubectl delete pod): the server waits for the node; the
	// node finishes the deletion and recreates it.
	if err := admin.CoreV1().Pods("kube-system").Delete(ctx, "etcd-node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := mirror(); p.DeletionTimestamp == nil {
		t.Fatal("a graceful delete of a bound pod did not wait for the node")
	}
	sync()
	third := mirror()
	if third.UID == second.UID || third.DeletionTimestamp != nil {
		t.Fatalf("after a graceful delete: UID %s (was %s), deletionTimestamp %v", third.UID, second.UID, third.DeletionTimestamp)
	}

	// The static pod changes: the mirror pod is replaced with the new hash.
	changed := decodeDefaulted(t, "/etc/plinth/manifests/etcd.yaml", "node-a", strings.Replace(etcdYAML, "etcd:3.5", "etcd:3.6", 1))
	m.SetStaticPods([]*corev1.Pod{changed})
	sync()
	fourth := mirror()
	if fourth.Annotations[AnnotationConfigMirror] != string(changed.UID) || fourth.Spec.Containers[0].Image != "registry.example/etcd:3.6" {
		t.Fatalf("after the change: hash %s image %s", fourth.Annotations[AnnotationConfigMirror], fourth.Spec.Containers[0].Image)
	}

	// The static pod goes: so does its mirror, and only it.
	m.SetStaticPods(nil)
	sync()
	if _, err := admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror pod after its static pod went: %v, want NotFound", err)
	}
	if _, err := admin.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Fatalf("an ordinary pod of the node: %v", err)
	}
}
