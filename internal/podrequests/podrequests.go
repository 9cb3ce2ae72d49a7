// Package podrequests computes what a pod takes from a node while it runs, as kubelet
// and kube-scheduler count it, for the control service's scheduler and the node's
// admission alike, so the two never disagree about whether a pod fits.
//
// It is pure: it owns nothing and touches nothing.
package podrequests

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amounts are resource quantities in the unit fits are compared in: millicores for cpu,
// the plain value (bytes, counts) for everything else.
type Amounts map[corev1.ResourceName]int64

// Amount converts a quantity of the named resource to the unit Amounts holds.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Of converts a resource list.
func Of(list corev1.ResourceList) Amounts {
	out := make(Amounts, len(list))
	for name, q := range list {
		out[name] = Amount(name, q)
	}
	return out
}

// Add adds o to a, resource by resource.
func (a Amounts) Add(o Amounts) {
	for name, v := range o {
		a[name] += v
	}
}

// RaiseTo raises each resource of a to o's amount where o's is larger.
func (a Amounts) RaiseTo(o Amounts) {
	for name, v := range o {
		if v > a[name] {
			a[name] = v
		}
	}
}

// IsSidecar reports an init container with restartPolicy Always: it keeps running next
// to the app containers.
func IsSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Effective is a pod's effective requests:
//
//   - the app containers and the sidecars together;
//   - or, when larger, the peak of the init phase: each plain init container runs alone
//     next to the sidecars started before it;
//   - pod-level requests (spec.resources), for the resources podLevel accepts, replace
//     the containers' figures;
//   - plus the pod overhead (spec.overhead) of its RuntimeClass.
//
// Each resource is maximised on its own, so the result may combine the cpu of one phase
// with the memory of another, as the reference does.
func Effective(pod *corev1.Pod, podLevel func(corev1.ResourceName) bool) Amounts {
	running := Amounts{}
	for _, c := range pod.Spec.Containers {
		running.Add(Of(c.Resources.Requests))
	}
	sidecars, initPeak := Amounts{}, Amounts{}
	for _, c := range pod.Spec.InitContainers {
		req := Of(c.Resources.Requests)
		if IsSidecar(c) {
			sidecars.Add(req)
			initPeak.RaiseTo(sidecars)
			continue
		}
		phase := Amounts{}
		phase.Add(sidecars)
		phase.Add(req)
		initPeak.RaiseTo(phase)
	}
	running.Add(sidecars)
	running.RaiseTo(initPeak)
	if pr := pod.Spec.Resources; pr != nil {
		for name, q := range pr.Requests {
			if podLevel(name) {
				running[name] = Amount(name, q)
			}
		}
	}
	running.Add(Of(pod.Spec.Overhead))
	return running
}
