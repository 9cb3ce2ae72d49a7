package podqos

import (
	corev1 "k8s.io/api/core/v1"
)

// qosResources are the resources the QoS class looks at; others (ephemeral storage,
// extended resources) never change it.
var qosResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// Class is the pod's quality of service class, computed as kubelet does. A class
// already in status.qosClass wins: it is fixed when the pod is created.
//
// Only positive cpu and memory quantities count. Without any request or limit the pod
// is BestEffort. It is Guaranteed when every container (init containers too; ephemeral
// containers have no resources) limits both cpu and memory, and the summed requests
// equal the summed limits for each resource (the API server defaults a missing request
// to its limit, so a pod that was never defaulted, with limits only, is Burstable here
// as in the reference). Everything else is Burstable. Pod-level resources (spec.resources), where the pod
// sets them, replace the containers'.
func Class(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return Compute(pod)
}

// Compute is Class ignoring status.qosClass: what the control service fixes there
// when a pod is created.
func Compute(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	// collect adds one set of requirements and reports whether it limits both cpu
	// and memory.
	collect := func(r corev1.ResourceRequirements) bool {
		addPositive(requests, r.Requests)
		return addPositive(limits, r.Limits) == len(qosResources)
	}
	if pr := pod.Spec.Resources; pr != nil && (len(pr.Requests) > 0 || len(pr.Limits) > 0) {
		limitsBoth := collect(*pr)
		if len(pr.Limits) > 0 && !limitsBoth {
			guaranteed = false
		}
	} else {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range list {
				if !collect(c.Resources) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addPositive adds to sum the positive cpu and memory quantities of list and returns
// how many of those resources list had.
func addPositive(sum, list corev1.ResourceList) int {
	found := 0
	for _, name := range qosResources {
		q, ok := list[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		found++
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}
