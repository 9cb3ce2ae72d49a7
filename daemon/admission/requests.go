package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/plinth/plinth/internal/podrequests"
)

// Resources are amounts by resource name in the unit admission compares: millicores for
// cpu, the plain value (bytes, counts) for everything else.
type Resources = podrequests.Amounts

// Amount converts a quantity of the named resource to the unit Resources holds.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 { return podrequests.Amount(name, q) }

// ResourcesOf converts a resource list.
func ResourcesOf(list corev1.ResourceList) Resources { return podrequests.Of(list) }

// PodRequests is what a pod takes from the node while it runs, as kubelet and the
// scheduler count it (podrequests.Effective); pod-level requests count for cpu and
// memory, the resources spec.resources may set for the whole pod.
func PodRequests(pod *corev1.Pod) Resources {
	return podrequests.Effective(pod, func(name corev1.ResourceName) bool {
		return name == corev1.ResourceCPU || name == corev1.ResourceMemory
	})
}

func isSidecar(c corev1.Container) bool { return podrequests.IsSidecar(c) }

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
