// Package admission decides, on the node, whether a pod bound to it may start: the
// checks kubelet runs as its lifecycle admit handlers before a pod's first sync.
//
//   - Node pressure (kubelet's eviction admit handler): under MemoryPressure alone,
//     BestEffort pods are refused unless they tolerate the memory-pressure taint; under
//     any other pressure condition every pod is refused; critical pods (static, mirror,
//     or priority at least system-cluster-critical) are always let through. Reason
//     Evicted, message "The node had condition: [DiskPressure]."
//   - General predicates (kubelet's predicate admit handler): the pod's OS, requests
//     against allocatable minus the pods already admitted (OutOfcpu, OutOfmemory,
//     OutOfephemeral-storage, OutOfpods, OutOf<extended resource>), the node selector
//     and required node affinity (NodeAffinity), spec.nodeName (NodeName), host ports
//     (NodePorts) and untolerated NoExecute taints (TaintToleration, static pods
//     exempt). Only the first failure is reported, as kubelet does.
//   - Graceful node shutdown: nothing is admitted while the node shuts down (reason
//     NodeShutdown; Terminated is the reason of the pods the shutdown stops).
//   - Pluggable checks after these, such as the seccomp check (SeccompCheck), which the
//     runtime backs with daemon/seccomp's Profiles.
//
// New builds an Admitter; Admit decides for one pod; AdmitInOrder admits a batch of new
// pods oldest first, each against the pods admitted before it, as kubelet handles pod
// additions.
//
// It also owns the helpers those checks share and the runtime reuses: a pod's QoS class
// (QOSClass) and its effective requests (PodRequests).
//
// It is pure logic: it reads only the values it is given and touches nothing.
package admission
