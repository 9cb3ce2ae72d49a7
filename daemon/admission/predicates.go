package admission

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
)

// admitByPredicates is kubelet's predicate admit handler: the checks that do not depend
// on the pod's fit come first (its OS), then the general predicates, all of them
// evaluated but only the first failure reported, in kubelet's order: resources (pods,
// cpu, memory, ephemeral-storage, then the other resources by name), node affinity,
// node name, host ports, NoExecute taints.
func admitByPredicates(in *Input) Result {
	if in.Node == nil {
		return refuse(ReasonInvalidNodeInfo, "plinthd cannot get node info.")
	}
	nodeOS := in.OS
	if nodeOS == "" {
		nodeOS = "linux"
	}
	if want, ok := in.Pod.Labels[corev1.LabelOSStable]; ok && want != nodeOS {
		return refuse(ReasonOSSelectorMismatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
	}
	if os := in.Pod.Spec.OS; os != nil && string(os.Name) != nodeOS {
		return refuse(ReasonOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS")
	}
	if r := firstInsufficient(in); r != nil {
		return refuse(r.reason(), r.Error())
	}
	for _, p := range []struct {
		name, desc string
		fits       func(*Input) bool
	}{
		{ReasonNodeAffinity, "node(s) didn't match Pod's node affinity/selector", matchesNodeAffinity},
		{ReasonNodeName, "node(s) didn't match the requested node name", matchesNodeName},
		{ReasonNodePorts, "node(s) didn't have free ports for the requested pod ports", hostPortsFree},
		{ReasonTaintToleration, "node(s) had taints that the pod didn't tolerate", toleratesNoExecuteTaints},
	} {
		if !p.fits(in) {
			return refuse(p.name, fmt.Sprintf("Predicate %s failed: %s", p.name, p.desc))
		}
	}
	return admitted
}

// insufficientResource is one resource the pod does not fit in.
type insufficientResource struct {
	name                      corev1.ResourceName
	requested, used, capacity int64
}

func (e *insufficientResource) Error() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		e.name, e.requested, e.used, e.capacity)
}

func (e *insufficientResource) reason() string {
	switch e.name {
	case corev1.ResourceCPU:
		return ReasonOutOfCPU
	case corev1.ResourceMemory:
		return ReasonOutOfMemory
	case corev1.ResourceEphemeralStorage:
		return ReasonOutOfEphemeralStorage
	case corev1.ResourcePods:
		return ReasonOutOfPods
	}
	return ReasonOutOfPrefix + string(e.name)
}

// firstInsufficient compares the pod's requests with the node's allocatable minus what
// the other pods request. Extended resources the node does not advertise at all are
// left out (they may be cluster-level resources kubelet knows nothing of); any other
// resource the pod asks for and the node lacks does not fit.
func firstInsufficient(in *Input) *insufficientResource {
	alloc := ResourcesOf(in.Node.Status.Allocatable)
	if used := len(in.OtherPods); int64(used+1) > alloc[corev1.ResourcePods] {
		return &insufficientResource{corev1.ResourcePods, 1, int64(used), alloc[corev1.ResourcePods]}
	}
	want := PodRequests(in.Pod)
	for name := range want {
		if _, known := alloc[name]; !known && isExtendedResource(name) {
			delete(want, name)
		}
	}
	used := Resources{}
	for _, p := range in.OtherPods {
		used.Add(PodRequests(p))
	}
	for _, name := range resourceOrder(want) {
		req := want[name]
		if req == 0 {
			continue
		}
		if req > alloc[name]-used[name] {
			return &insufficientResource{name, req, used[name], alloc[name]}
		}
	}
	return nil
}

// resourceOrder is kubelet's order of resource checks: cpu, memory, ephemeral-storage,
// then the rest by name.
func resourceOrder(r Resources) []corev1.ResourceName {
	first := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	var rest []corev1.ResourceName
	for name := range r {
		if !slices.Contains(first, name) && name != corev1.ResourcePods {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(first, rest...)
}

func matchesNodeName(in *Input) bool {
	return in.Pod.Spec.NodeName == "" || in.Pod.Spec.NodeName == in.Node.Name
}

// toleratesNoExecuteTaints: only NoExecute taints matter on the node (the others were
// the scheduler's business), and static pods are exempt, as in kubelet.
func toleratesNoExecuteTaints(in *Input) bool {
	if isStatic(in.Pod) {
		return true
	}
	for i := range in.Node.Spec.Taints {
		t := &in.Node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectNoExecute && !tolerates(in.Pod.Spec.Tolerations, t) {
			return false
		}
	}
	return true
}

// isStatic reports a pod from a file or URL rather than the API (its config source
// annotation is set and not "api").
func isStatic(pod *corev1.Pod) bool {
	src, ok := pod.Annotations[pressure.AnnotationConfigSource]
	return ok && src != "api"
}
