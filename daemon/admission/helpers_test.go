package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// list builds a resource list from name/quantity pairs.
func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func sidecar(name string, req corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := ctr(name, req, nil)
	c.RestartPolicy = &always
	return c
}

func podWith(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p"},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func node(name string, alloc corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: alloc},
	}
}
