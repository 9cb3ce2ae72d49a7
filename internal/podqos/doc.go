// Package podqos computes a pod's quality-of-service class as Kubernetes defines it,
// once for the control service (which fixes status.qosClass at creation), node
// admission, node-pressure eviction and the runtime's cgroup and OOM-score settings, so
// none of them can disagree about a pod's class.
//
// It is pure: it owns nothing and touches nothing.
package podqos
