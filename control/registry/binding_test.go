package registry_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/registry"
)

func TestBinding(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	pods := api.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding: %v", err)
	}
	p, _ := pods.Get(ctx, "web", metav1.GetOptions{})
	if p.Spec.NodeName != "n1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.PodScheduled || p.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("after binding: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	binding.Target.Name = "n2"
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("second binding: %v, want Conflict", err)
	}
}
