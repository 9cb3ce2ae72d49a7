// Package ipalloc hands out Service cluster IPs and node ports the way Kubernetes does:
// a range split into a lower band kept for addresses users ask for by value (static)
// and an upper band that dynamic allocation prefers, falling back to the lower band
// only when the upper one is full.
//
// Every claim is one etcd key created with a compare-and-create (storage.Store.Create),
// so control-service replicas sharing one etcd can never hand out the same item twice.
// The key's value names the owner (namespace, name, UID) so a retried claim by the same
// owner succeeds and a release never frees another owner's claim.
//
// It owns the keys under the prefixes it is given and touches nothing else.
package ipalloc
