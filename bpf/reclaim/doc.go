// Package reclaim measures how long tasks stall in synchronous memory reclaim, per
// cgroup: direct reclaim (the node is short of memory) and memory cgroup limit reclaim
// (an allocation would take a cgroup over its limit, which on a host with limited pods
// is the stall that precedes a cgroup OOM kill). It keeps running totals per cgroup v2
// id and reports each single stall longer than a threshold as a StallBurst.
//
// Stalls are charged to the stalling task's cgroup v2 id (on a hybrid host its cgroup
// in the unified hierarchy at /sys/fs/cgroup/unified), the inode number of that cgroup
// directory. Reclaim a task does on behalf of another cgroup (writing memory.reclaim
// or lowering a limit) is charged to the writer's cgroup.
//
// It owns the BPF programs, maps and ring buffer reader it loads (released by Close).
// It touches the kernel through bpf/attach: the BPF syscall and tracefs.
package reclaim
