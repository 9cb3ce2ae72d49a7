package admission

import (
	corev1 "k8s.io/api/core/v1"
)

// wildcardHostIP is what an empty hostIP means: every address of the node.
const wildcardHostIP = "0.0.0.0"

type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// hostPortsOf lists the host ports a pod's long-running containers (app containers
// and sidecars) bind, with kubelet's defaults filled in (TCP, every address). Sidecars
// count since Kubernetes 1.34 (kubernetes/kubernetes#132040); plain init containers
// never did: they run before the app containers and one at a time.
func hostPortsOf(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = wildcardHostIP
			}
			if hp.protocol == "" {
				hp.protocol = corev1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if isSidecar(c) {
			add(c)
		}
	}
	for _, c := range pod.Spec.Containers {
		add(c)
	}
	return out
}

// conflicts: same protocol and port, and the same address or either on every address.
func (a hostPort) conflicts(b hostPort) bool {
	if a.protocol != b.protocol || a.port != b.port {
		return false
	}
	return a.ip == b.ip || a.ip == wildcardHostIP || b.ip == wildcardHostIP
}

// hostPortsFree: none of the pod's host ports is taken by a pod already admitted.
// Ports within the pod itself are the API's validation's business, not admission's.
func hostPortsFree(in *Input) bool {
	want := hostPortsOf(in.Pod)
	if len(want) == 0 {
		return true
	}
	for _, other := range in.OtherPods {
		for _, used := range hostPortsOf(other) {
			for _, w := range want {
				if w.conflicts(used) {
					return false
				}
			}
		}
	}
	return true
}
