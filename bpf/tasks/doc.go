// Package tasks counts task creation and exit, node-wide and per cgroup v2 id, from
// the sched:sched_process_fork and sched:sched_process_exit tracepoints, so plinthd
// sees fork rates (and fork bursts) as they happen.
//
// Every task counts, threads included, since threads use up process ids as processes
// do. Counts start at Load: a cgroup's Live figure (forks minus exits) is the change
// in its number of tasks since then, not the number itself, and tasks that move
// between cgroups leave it off for both (cgroup.procs and pids.current have the exact
// numbers). Forks are counted in the child's cgroup in tp_btf mode and in the
// parent's in tracepoint mode, which differ only for clone3(CLONE_INTO_CGROUP).
//
// It owns the BPF programs and maps it loads (released by Close). It touches the
// kernel through bpf/attach: the BPF syscall and tracefs.
package tasks
