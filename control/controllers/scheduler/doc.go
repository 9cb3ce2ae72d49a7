// Package scheduler is plinth-control's scheduler: it binds pods that have no node yet
// (and name no other scheduler) to the node that fits them best, one pod at a time.
//
// Filters, in order, each refusing a node with kube-scheduler's words for it: the Ready
// condition not True and spec.unschedulable (unless the pod tolerates the NoSchedule
// taint the node lifecycle controller sets for them), NoSchedule and NoExecute taints
// the pod does not tolerate, nodeSelector and required node affinity, the
// MemoryPressure (BestEffort pods only), DiskPressure and PIDPressure conditions (again
// unless the matching NoSchedule taint is tolerated, as DaemonSet pods do),
// and resources: the pod's effective requests (containers and sidecars, or the largest
// init phase, plus overhead) against allocatable minus the requests of the pods
// already on the node or being bound there by this process, and one more pod against
// the pods allocatable. Among the nodes left, the least allocated (cpu and memory with
// equal weight, pods without requests counting kube-scheduler's 100m and 200Mi) wins;
// ties go to the first name, so the choice is stable.
//
// A pod is bound through the pods/binding subresource, with a Scheduled event. When
// nothing fits, it gets a FailedScheduling warning event with a message like
// kube-scheduler's ("0/3 nodes are available: 1 node(s) had untolerated taint
// {k: v}, 2 Insufficient memory.") and the PodScheduled=False condition with reason
// Unschedulable, and waits: a node change that matters to the filters, or a pod
// leaving a node, wakes it after its backoff (1 s doubling to 10 s); without one, it is
// tried again after 5 minutes. Failed bindings and status writes are retried with the
// same backoff.
//
// It owns its queue and, in memory, the requests placed on each node (from the pod
// cache, plus pods it bound that the cache does not show bound yet). It reads Pods and
// Nodes through the informers it is given and writes only pods/binding, the
// PodScheduled condition through pods/status, and events through the recorder it is
// given. Filters and scores are pure functions (filter, pickNode, demandOf), tested
// with tables; time comes from the injected clock.
package scheduler
