package plinthd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

// Admission reads the node for every batch of new pods; when that read fails it admits
// from the copy read before rather than refusing every pod (a busy control service
// made a burst of 100 pods fail that way).
func TestAdmissionNodeFallsBackToTheLastCopy(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}
	cs := fake.NewClientset()
	down := false
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down {
			return true, nil, errors.New("connection refused")
		}
		return true, node.DeepCopy(), nil
	})
	r := &podRuntime{client: nodeclienttest.FromClientset(cs), nodeName: "n1", logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()

	down = true
	if got := r.currentNode(ctx); got != nil {
		t.Fatalf("with no read ever made, a failed read gave %v; want nil", got)
	}
	down = false
	if got := r.currentNode(ctx); got == nil || got.Name != "n1" {
		t.Fatalf("read: %v", got)
	}
	down = true
	got := r.currentNode(ctx)
	if got == nil || got.Status.Allocatable.Pods().Value() != 110 {
		t.Fatalf("a failed read after a good one gave %v; want the earlier copy", got)
	}
	// The copy is the caller's to change.
	got.Name = "changed"
	if again := r.currentNode(ctx); again.Name != "n1" {
		t.Errorf("the kept copy was changed through a returned one: %q", again.Name)
	}
}
