// Package gc is plinth-control's garbage collector: it deletes objects whose owners are
// gone, and carries out the Orphan and Foreground propagation policies that a DELETE
// leaves to it, with the semantics of Kubernetes' garbage collector.
//
// It watches every resource that discovery reports as listable, watchable and
// deletable (events excepted, as in Kubernetes), re-discovering periodically, and keeps
// a graph of objects by UID with an index from each owner's UID to its dependents,
// built from metadata.ownerReferences. It sees only metadata: informers, live reads and
// writes go through client-go's metadata client, which the API server answers with
// PartialObjectMetadata in protobuf (no object is decoded whole, as the dynamic client's
// JSON into unstructured maps would), and the informers' caches keep only the fields
// the collector reads. An object's kind, which owner references name, comes from
// discovery's entry for the resource it was watched through.
//
//   - Background: a dependent none of whose owners exists any more is deleted with
//     propagationPolicy Background (or Orphan/Foreground when it already carries that
//     finalizer). An owner counts as absent only after a live GET by name returns
//     NotFound or an object with another UID; a dependent with at least one existing
//     owner stays, and references to its absent owners are removed.
//   - Orphan: an owner marked for deletion with the "orphan" finalizer has its
//     reference removed from every dependent, then loses the finalizer, which lets the
//     API server delete it.
//   - Foreground: an owner marked for deletion with the "foregroundDeletion" finalizer
//     has its dependents deleted (Foreground for dependents that own objects
//     themselves, so the chain is honoured, else Background); a dependent that has
//     another existing owner instead loses its reference to the deleting one. The
//     owner's finalizer is removed once no dependent with blockOwnerDeletion=true
//     references it; dependents without that flag do not hold the owner back and are
//     collected like any other orphaned dependent.
//
// Scope rules follow Kubernetes: a namespaced owner is looked up in its dependent's
// namespace, so a reference to a namespaced owner in another namespace resolves as
// absent (and a warning event OwnerRefInvalidNamespace is recorded when the UID is
// known in another namespace); a cluster-scoped dependent naming a namespaced owner is
// unresolvable: it is never collected and gets the same warning. Cluster-scoped owners
// may own objects anywhere.
//
// Every decision is taken again from live reads when a work item is processed, so the
// collector is level-triggered, idempotent and safe to restart: the graph is rebuilt
// from the informers, and every dependent is checked once at start. Deletions carry UID
// and resourceVersion preconditions, and metadata writes are JSON merge patches
// carrying the resourceVersion they were computed from, so a concurrent change turns
// into a conflict and a retry rather than a lost update.
//
// Not done: the unblocking of ownerReferences that Kubernetes applies to break
// Foreground cycles (an owner and dependent both waiting for each other stay until one
// is deleted by hand).
//
// It owns its informers, work queue and graph. It writes only what is described above:
// DELETEs of dependents, ownerReferences of dependents and the orphan and
// foregroundDeletion finalizers of owners.
package gc
