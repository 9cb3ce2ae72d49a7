// Package tainteviction is plinth-control's taint eviction controller: it deletes the
// pods of nodes that carry NoExecute taints the pods do not tolerate.
//
// A pod that does not tolerate one of its node's NoExecute taints is deleted at once. A
// pod that tolerates every one of them is deleted when the first toleration runs out:
// for each taint the matching toleration with the longest tolerationSeconds counts (one
// without tolerationSeconds tolerates forever), measured from the taint's timeAdded —
// or, for a taint without one, from when this controller first saw it — and the pod goes
// at the earliest of these deadlines. A pod whose tolerations all last forever stays.
// When a taint goes away (or a pod's tolerations change) before the deadline, the
// scheduled deletion is cancelled with a TaintManagerEviction event.
//
// Before deleting, it records a TaintManagerEviction event and sets the pod condition
// DisruptionTarget=True with reason DeletionByTaintManager through pods/status, so the
// pod's owner can tell an eviction from a failure; then it deletes the pod with a UID
// precondition, so a new pod of the same name is never hit. Every decision is taken
// again from the caches when the deadline comes, so a stale timer deletes nothing.
//
// It owns its schedule of deadlines (in memory, rebuilt from the caches after a restart:
// deadlines come from timeAdded, so a restart does not give pods more time). It reads
// Pods and Nodes through the informers it is given and writes only pods/status (the one
// condition) and pod deletions, and events through the recorder it is given. All time
// comes from the injected clock.
package tainteviction
