// Package nodelifecycle is the health part of plinth-control's node lifecycle
// controller: it decides whether each Node is still alive from the two heartbeats a node
// agent sends — renewals of its Lease in kube-node-lease and the lastHeartbeatTime of its
// Ready condition — and, when both have been silent past the grace period, sets the
// node's Ready, MemoryPressure, DiskPressure and PIDPressure conditions to Unknown.
//
// Only changes of the node's timestamps count, and each change is stamped with this
// controller's own clock when it is seen: a node's clock may be skewed or wrong, so its
// timestamps are never used to measure age.
//
// It owns one in-memory health record per Node (rebuilt from the informer caches after
// a restart, giving every node a fresh grace period). It reads Nodes and Leases through
// the informers it is given, writes only the status subresource of Nodes, and there only
// the four conditions above. It never writes Leases and never sets a condition back to
// True: the node agent does that when it returns.
//
// The decision is a pure function of a record, a time and the Options (decide), so the
// taints, zone states and evictions that come later can build on the same record and
// verdict.
package nodelifecycle
