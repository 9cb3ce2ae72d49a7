package admission

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources are amounts by resource name in the unit admission compares: millicores for
// cpu, the plain value (bytes, counts) for everything else.
type Resources map[corev1.ResourceName]int64

// Amount converts a quantity of the named resource to the unit Resources holds.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// ResourcesOf converts a resource list.
func ResourcesOf(list corev1.ResourceList) Resources {
	out := make(Resources, len(list))
	for name, q := range list {
		out[name] = Amount(name, q)
	}
	return out
}

func (r Resources) add(o Resources) {
	for name, v := range o {
		r[name] += v
	}
}

func (r Resources) raiseTo(o Resources) {
	for name, v := range o {
		if v > r[name] {
			r[name] = v
		}
	}
}

// podLevelResources are the resources spec.resources may set for the whole pod.
var podLevelResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// PodRequests is what a pod takes from the node while it runs, as kubelet and the
// scheduler count it:
//
//   - the app containers and the sidecars (init containers with restartPolicy Always,
//     which keep running) together;
//   - or, when larger, the peak of the init phase: each plain init container runs
//     alone next to the sidecars started before it;
//   - pod-level requests (spec.resources, cpu and memory), where set, replace the
//     containers' figures for their resource;
//   - plus the pod overhead (spec.overhead) of its RuntimeClass.
//
// Each resource is maximised on its own, so the result may combine the cpu of one phase
// with the memory of another, as the reference does.
func PodRequests(pod *corev1.Pod) Resources {
	running := Resources{}
	for _, c := range pod.Spec.Containers {
		running.add(ResourcesOf(c.Resources.Requests))
	}
	sidecars, initPeak := Resources{}, Resources{}
	for _, c := range pod.Spec.InitContainers {
		req := ResourcesOf(c.Resources.Requests)
		if isSidecar(c) {
			sidecars.add(req)
			initPeak.raiseTo(sidecars)
			continue
		}
		phase := maps.Clone(sidecars)
		phase.add(req)
		initPeak.raiseTo(phase)
	}
	running.add(sidecars)
	running.raiseTo(initPeak)
	if pr := pod.Spec.Resources; pr != nil {
		for _, name := range podLevelResources {
			if q, ok := pr.Requests[name]; ok {
				running[name] = Amount(name, q)
			}
		}
	}
	running.add(ResourcesOf(pod.Spec.Overhead))
	return running
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// isExtendedResource reports whether name is an extended resource, as the API defines
// it: a name with a domain outside kubernetes.io (such as example.com/gpu) and not a
// quota name (requests.*). Native resources (no domain, or a kubernetes.io one, which
// includes hugepages-* and the like) are not.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") {
		return false
	}
	return !strings.HasPrefix(s, "requests.")
}
