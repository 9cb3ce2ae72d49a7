package podqos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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

func podWith(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}}
}

func TestQOSClass(t *testing.T) {
	guaranteed := ctr("g", list("cpu", "1", "memory", "1Gi"), list("cpu", "1", "memory", "1Gi"))
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"no resources", podWith(ctr("a", nil, nil)), corev1.PodQOSBestEffort},
		{"only ephemeral storage and extended resources", podWith(ctr("a", list("ephemeral-storage", "1Gi", "example.com/gpu", "1"), list("example.com/gpu", "1"))), corev1.PodQOSBestEffort},
		{"zero requests count as none", podWith(ctr("a", list("cpu", "0", "memory", "0"), nil)), corev1.PodQOSBestEffort},
		{"requests equal limits", podWith(guaranteed), corev1.PodQOSGuaranteed},
		{"limits only, before defaulting copies them to requests", podWith(ctr("a", nil, list("cpu", "1", "memory", "1Gi"))), corev1.PodQOSBurstable},
		{"equal in a different unit", podWith(ctr("a", list("cpu", "1000m", "memory", "1024Mi"), list("cpu", "1", "memory", "1Gi"))), corev1.PodQOSGuaranteed},
		{"cpu request below limit", podWith(ctr("a", list("cpu", "500m", "memory", "1Gi"), list("cpu", "1", "memory", "1Gi"))), corev1.PodQOSBurstable},
		{"memory limit missing", podWith(ctr("a", list("cpu", "1"), list("cpu", "1"))), corev1.PodQOSBurstable},
		{"request only", podWith(ctr("a", list("memory", "1Gi"), nil)), corev1.PodQOSBurstable},
		{"one container guaranteed, one best effort", podWith(guaranteed, ctr("b", nil, nil)), corev1.PodQOSBurstable},
		{"init container counts", func() *corev1.Pod {
			p := podWith(guaranteed)
			p.Spec.InitContainers = []corev1.Container{ctr("i", list("cpu", "100m"), nil)}
			return p
		}(), corev1.PodQOSBurstable},
		{"best effort app, burstable init", func() *corev1.Pod {
			p := podWith(ctr("a", nil, nil))
			p.Spec.InitContainers = []corev1.Container{ctr("i", list("memory", "10Mi"), nil)}
			return p
		}(), corev1.PodQOSBurstable},
		{"pod-level resources replace the containers'", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "100m"), nil))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "2", "memory", "1Gi"), Limits: list("cpu", "2", "memory", "1Gi")}
			return p
		}(), corev1.PodQOSGuaranteed},
		{"pod-level limits on cpu only", func() *corev1.Pod {
			p := podWith(guaranteed)
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: list("cpu", "2")}
			return p
		}(), corev1.PodQOSBurstable},
		{"status wins", func() *corev1.Pod {
			p := podWith(ctr("a", nil, nil))
			p.Status.QOSClass = corev1.PodQOSGuaranteed
			return p
		}(), corev1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.pod); got != tt.want {
				t.Errorf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}
