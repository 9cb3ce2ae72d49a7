package apiserver

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The typed comparison must agree with the unstructured one it replaced on what counts
// as a spec change.
func TestSpecChangedAgreesWithUnstructured(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "i",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
	}
	cases := []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"nothing", func(*corev1.Pod) {}, false},
		{"labels only", func(p *corev1.Pod) { p.Labels["b"] = "2" }, false},
		{"status only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		{"type meta only", func(p *corev1.Pod) { p.Kind = "Pod" }, false},
		{"nil list and empty list", func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{} }, false},
		{"same quantity written differently", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, false},
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "j" }, true},
		{"a set pointer", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](3) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(b)
			got, err := specChanged(b, a)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := specChangedUnstructured(b, a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || slow != tc.want {
				t.Fatalf("specChanged = %v, unstructured = %v; want %v", got, slow, tc.want)
			}
		})
	}
}

// Kinds without spec or status: every field but metadata is the spec.
func TestSpecChangedTopLevelFields(t *testing.T) {
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	b := a.DeepCopy()
	b.Data["k"] = "w"
	if changed, _ := specChanged(b, a); !changed {
		t.Fatal("a ConfigMap's data changed and specChanged said no")
	}
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n")}}
	renewed := l.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{}
	if changed, _ := specChanged(renewed, l); !changed {
		t.Fatal("a Lease renewal is a spec change and specChanged said no")
	}
}

func TestWithStatusOfCopiesWithoutChangingEither(t *testing.T) {
	r := &Resource{Kind: "Node", New: func() runtime.Object { return &corev1.Node{} }}
	obj := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"}, Status: corev1.NodeStatus{Phase: "old"}}
	src := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "other"}, Status: corev1.NodeStatus{
		Phase: "new", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}}
	out, err := withStatusOf(r, obj, src)
	if err != nil {
		t.Fatal(err)
	}
	n := out.(*corev1.Node)
	if n.Spec.PodCIDR != "10.0.0.0/24" || n.Status.Phase != "new" || n.Status.Capacity.Cpu().String() != "2" {
		t.Fatalf("got spec %q status %q capacity %v; want obj's spec with src's status", n.Spec.PodCIDR, n.Status.Phase, n.Status.Capacity)
	}
	if obj.Status.Phase != "old" {
		t.Fatal("withStatusOf changed obj")
	}
	n.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("1Gi")
	if len(src.Status.Capacity) != 1 {
		t.Fatal("the result shares src's status maps: changing it changed src")
	}
}
