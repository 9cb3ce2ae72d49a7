// Package podgc is plinth-control's pod garbage collector: it force-deletes pods that
// nothing else will ever remove, with the rules of Kubernetes' pod GC controller.
//
// Every CheckPeriod (20 s, as kube-controller-manager's gcCheckPeriod) it looks at the
// pod and node caches and force-deletes (grace period 0, with the pod's UID as a
// precondition, so a new pod of the same name is never hit):
//
//   - terminated pods (phase Succeeded or Failed) beyond TerminatedPodThreshold, oldest
//     first: evicted pods before others, then by creation time, then by name (0 turns
//     this rule off);
//   - terminating pods (deletionTimestamp set) on a node that is not Ready and carries
//     the node.kubernetes.io/out-of-service taint (non-graceful node shutdown: the
//     operator says the node is down, so nobody will confirm the deletion);
//   - pods bound to a node that no longer exists: a node name missing from the node
//     cache is quarantined for Quarantine (40 s), so a node the cache has not seen yet
//     gets time to show up, and only then confirmed gone by a live read of the Node
//     (not the cache) before its pods are deleted;
//   - terminating pods bound to no node (nothing runs them, so nothing would confirm).
//
// A pod that is not yet terminal is first moved to phase Failed through pods/status, as
// Kubernetes does, because no node agent will ever do it; orphaned and out-of-service
// pods also get the condition DisruptionTarget=True with reason DeletionByPodGC, so
// their owners can tell a disruption from a failure. A pod whose deletion already went
// through and that waits only for its finalizers is left alone: deleting it again
// would change nothing.
//
// It owns the quarantine of missing node names (in memory: after a restart each gets a
// fresh quarantine, which can only delay a deletion). It reads Pods and Nodes through
// the informers it is given and Nodes by live GET; it writes pods/status (phase and
// the one condition) and pod deletions, nothing else. All time comes from the injected
// clock.
package podgc
