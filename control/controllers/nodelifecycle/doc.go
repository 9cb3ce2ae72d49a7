// Package nodelifecycle is plinth-control's node lifecycle controller. It decides whether
// each Node is still alive from the two heartbeats a node agent sends — renewals of its
// Lease in kube-node-lease and the lastHeartbeatTime of its Ready condition — and, when
// both have been silent past the grace period, sets the node's Ready, MemoryPressure,
// DiskPressure and PIDPressure conditions to Unknown and its pods' Ready condition to
// False (so Services stop sending them traffic).
//
// Only changes of the node's timestamps count, and each change is stamped with this
// controller's own clock when it is seen: a node's clock may be skewed or wrong, so its
// timestamps are never used to measure age.
//
// Taints. NoSchedule taints mirror the node's conditions and spec: not-ready (Ready
// False), unreachable (Ready Unknown), memory-pressure, disk-pressure, pid-pressure,
// network-unavailable and unschedulable (spec.unschedulable). NoExecute taints not-ready
// and unreachable, with timeAdded set, start the eviction of the node's pods (the
// tainteviction controller carries it out). They are removed when the node is Ready and
// swapped for each other at once when its state flips, but added only as fast as the
// node's zone allows: zones come from the topology region and zone labels, and each
// has a token bucket whose rate follows its disruption state — Normal and
// FullDisruption at EvictionRate, PartialDisruption (at least UnhealthyZoneThreshold of
// more than two nodes not Ready) at SecondaryEvictionRate for zones of more than
// LargeClusterSizeThreshold nodes and not at all for smaller ones. When every zone is
// fully disrupted the controller takes itself to be cut off, removes every NoExecute
// taint and adds none; when that ends every node gets a fresh grace period. A node whose
// Ready is Unknown is tainted only once this controller instance has itself found it
// silent past its grace, so a restart never evicts on a previous instance's word.
//
// It owns one in-memory health record per Node and the zones' states and queues (rebuilt
// from the informer caches after a restart, giving every node a fresh grace period). It
// reads Nodes, Leases and Pods through the informers it is given; it writes the status
// subresource of Nodes (only the four conditions above), Node spec.taints (only the
// taints above, by update with conflict retry, so other taints are never lost), the
// Ready condition of pods on silent nodes through pods/status, and events through the
// recorder it is given. It never writes Leases and never sets a condition back to True:
// the node agent does that when it returns. Nodes that fall silent together are marked
// (and their pods) with up to statusWriteWorkers writes in flight at once, so the last
// of a thousand is not marked a thousand round trips late.
//
// The decisions are pure functions — decide (health), zoneCount.state and zoneRate
// (disruption), planTaints (taint lists) — and the token buckets take the controller's
// injected clock, so every rule is tested with a fake clock.
package nodelifecycle
