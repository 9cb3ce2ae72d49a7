// Package poddefaults fills a pod spec's defaults as the Kubernetes API does, for both
// places pods come from: the control service's pod resource, and the manifests of
// static pods, which kubelet defaults the same way when it reads them. Admission-like
// additions (the control service's not-ready tolerations, a static pod's node name) and
// status stay with their callers.
//
// It is pure: it owns nothing and touches nothing.
package poddefaults
