// Package oomwatch reports kernel OOM kills as they happen, from the oom:mark_victim
// tracepoint: the victim's pid and, where the kernel gives them, its comm, uid,
// oom_score_adj, memory figures and cgroups.
//
// Cgroups are named by id: CgroupID is the victim's cgroup in the cgroup v2 tree (on a
// hybrid host the unified hierarchy at /sys/fs/cgroup/unified), MemcgID the cgroup
// whose memory controller charged it (on a hybrid host in the v1 memory hierarchy).
// Both are the inode numbers of those cgroup directories, so a caller maps them to
// pods by stat(2)-ing the directories it created.
//
// It owns the BPF programs, maps and ring buffer reader it loads (released by Close).
// It touches the kernel through bpf/attach: the BPF syscall and tracefs.
package oomwatch
