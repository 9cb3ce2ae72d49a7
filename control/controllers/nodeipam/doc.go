// Package nodeipam is plinth-control's node IPAM controller, the first role of
// Kubernetes' node controller (kube-controller-manager's range allocator): every Node
// gets spec.podCIDRs (and spec.podCIDR, the first of them) carved from the cluster
// CIDRs (--cluster-cidr: at most one IPv4 and one IPv6 CIDR) in blocks of
// --node-cidr-mask-size (IPv4, default /24) and --node-cidr-mask-size-ipv6 (default
// /64). The controller is off when no cluster CIDR is configured.
//
// Why two replicas never hand out one CIDR twice: the controller runs only on the
// leader, like every control loop (a leader gives up its loops when it cannot renew
// its Lease within the renew deadline, before the lease runs out and another replica
// may take it), and it allocates nothing before it has rebuilt the occupied set from
// every Node in its synced cache. A CIDR is marked occupied before the Node write that
// carries it and stays occupied while the write is retried, so a write that failed
// halfway is retried with the same CIDR; spec.podCIDR(s) may not change once set (the
// registry refuses it), so what a Node carries is what the next leader rebuilds. This
// is the reference's design; claims in etcd (as control/ipalloc makes for Service IPs)
// would add a second record to repair for no gain while one writer holds the Lease.
//
// A Node's CIDRs are released when the Node is deleted (or replaced by a Node of the
// same name with another UID). When a range is exhausted the Node gets a Warning event
// CIDRNotAvailable and the condition NetworkUnavailable=True with reason
// CIDRNotAvailable (so the node lifecycle controller taints it
// node.kubernetes.io/network-unavailable and nothing is scheduled there); it is
// retried whenever a CIDR is released, and the condition turns False (reason
// CIDRAssigned) once it gets its CIDRs. Nodes that already carry CIDRs, assigned by an
// administrator or an earlier leader, are left as they are; their CIDRs inside the
// cluster CIDRs count as occupied.
//
// It owns the in-memory occupied set (rebuilt at every start). It reads Nodes through
// the informer it is given and writes only spec.podCIDR, spec.podCIDRs, the
// NetworkUnavailable condition it sets, and Events about Nodes. All time comes from
// the injected clock.
package nodeipam
