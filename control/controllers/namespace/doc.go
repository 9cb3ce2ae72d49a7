// Package namespace is plinth-control's namespace controller: it empties a namespace
// marked for deletion and then releases it, as Kubernetes' namespace controller does.
//
// A DELETE of a namespace leaves it with a deletionTimestamp and phase Terminating
// while spec.finalizers holds "kubernetes" (control/registry's Namespaces). The
// controller then deletes every object of every namespaced resource that discovery
// reports as listable and deletable, with propagationPolicy Background, one object at
// a time with a UID precondition (not deletecollection, which would hit an object
// created meanwhile under the same name). Objects that take time to go (finalizers,
// graceful pods) are waited for by looking again every Options.RecheckPeriod. Once
// the namespace is empty and discovery answered for every group, "kubernetes" is
// removed from spec.finalizers (and from metadata.finalizers, should a registry keep
// it there) through a JSON merge patch on the namespace itself — the API serves no
// namespaces/finalize subresource — and the namespace is deleted again, which removes
// it when no other finalizer remains.
//
// Every pass starts from live reads, so the controller is level-triggered, idempotent
// and safe to restart. It writes no status conditions (Kubernetes'
// NamespaceContentRemaining and friends) yet.
//
// It waits, without failing, until the API serves namespaces at all. It owns its
// namespace informer and work queue, and writes DELETEs of namespaced objects and the
// finalizers of namespaces being deleted. Protecting default, kube-system, kube-public
// and kube-node-lease from deletion is the API's job (validation), not this package's.
package namespace
