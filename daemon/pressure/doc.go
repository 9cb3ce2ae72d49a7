// Package pressure decides when the node is under memory, disk or PID pressure and
// what to do about it. It turns observations of the node (memory available, filesystem
// space and inodes, free process IDs) into kubelet-style eviction signals, compares them
// with hard and soft thresholds, reports the MemoryPressure, DiskPressure and
// PIDPressure node conditions with a pressure transition period, and, when a hard
// threshold is crossed or a soft one has been crossed for its grace period, asks for
// node-level reclaim and then evicts pods one at a time in kubelet's ranking order.
//
// It owns no kernel state and reads nothing itself: observations come from a
// SignalSource, event-driven re-evaluation from Wakeups (PSI triggers, reclaim stalls,
// OOM kills, fork bursts), pods from a PodLister, and evictions and reclaim go through
// Evictor and NodeReclaimer. Those are implemented elsewhere (kernel/psi,
// kernel/cgroup, kernel/sysinfo, bpf/, the pod runtime), so everything here is pure
// logic tested with fakes and a fake clock.
//
// It also owns the parsing and validation of the eviction thresholds, which
// daemon/config calls so configuration errors name the file, field and value.
package pressure
