package admission

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Resources
	}{
		{"nothing", podWith(ctr("a", nil, nil)), Resources{}},
		{"app containers add up", podWith(ctr("a", list("cpu", "100m", "memory", "1Mi"), nil), ctr("b", list("cpu", "1", "example.com/gpu", "2"), nil)),
			Resources{"cpu": 1100, "memory": 1 << 20, "example.com/gpu": 2}},
		{"limits are not requests", podWith(ctr("a", nil, list("cpu", "1"))), Resources{}},
		{"an init container larger than the app containers", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "100m", "memory", "100Mi"), nil))
			p.Spec.InitContainers = []corev1.Container{ctr("i", list("cpu", "2", "memory", "1Mi"), nil)}
			return p
		}(), Resources{"cpu": 2000, "memory": 100 << 20}},
		{"init containers take the max, not the sum", func() *corev1.Pod {
			p := podWith(ctr("a", nil, nil))
			p.Spec.InitContainers = []corev1.Container{ctr("i1", list("cpu", "1"), nil), ctr("i2", list("cpu", "2"), nil)}
			return p
		}(), Resources{"cpu": 2000}},
		{"sidecars run beside the app and the later init containers", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "500m"), nil))
			p.Spec.InitContainers = []corev1.Container{
				ctr("before", list("cpu", "3"), nil), // runs alone: 3
				sidecar("proxy", list("cpu", "1")),
				ctr("after", list("cpu", "2500m"), nil), // runs beside proxy: 3.5
			}
			return p
		}(), Resources{"cpu": 3500}},
		{"sidecars add to the app containers", func() *corev1.Pod {
			p := podWith(ctr("a", list("memory", "1Gi"), nil))
			p.Spec.InitContainers = []corev1.Container{sidecar("s", list("memory", "512Mi"))}
			return p
		}(), Resources{"memory": 1536 << 20}},
		{"overhead is added", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "1"), nil))
			p.Spec.Overhead = list("cpu", "250m", "memory", "120Mi")
			return p
		}(), Resources{"cpu": 1250, "memory": 120 << 20}},
		{"pod-level requests replace cpu and memory only", func() *corev1.Pod {
			p := podWith(ctr("a", list("cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi"), nil))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "4")}
			p.Spec.Overhead = list("cpu", "100m")
			return p
		}(), Resources{"cpu": 4100, "memory": 1 << 30, "ephemeral-storage": 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(tt.pod)
			maps.DeleteFunc(got, func(_ corev1.ResourceName, v int64) bool { return v == 0 })
			if !maps.Equal(got, tt.want) {
				t.Errorf("PodRequests = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsExtendedResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		"cpu": false, "memory": false, "hugepages-2Mi": false, "kubernetes.io/batch-cpu": false,
		"example.com/gpu": true, "nvidia.com/gpu": true, "requests.example.com/gpu": false,
	} {
		if got := isExtendedResource(name); got != want {
			t.Errorf("isExtendedResource(%q) = %v, want %v", name, got, want)
		}
	}
}
