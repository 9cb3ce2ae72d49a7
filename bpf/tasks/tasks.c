//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Task creation and exit, from sched:sched_process_fork and sched:sched_process_exit:
 * node-wide totals and counts per cgroup v2 id.
 *
 * Every task counts, threads included, because threads use up process ids like
 * processes do (pid.available, pids.max): fork fires for each clone, exit for each
 * task that exits.
 */
#include "plinth_tracing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct task_counts {
	__u64 forks;
	__u64 exits;
};

/* Per cgroup v2 id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct task_counts);
} tasks_by_cgroup SEC(".maps");

/* Node-wide, per CPU so that forks on different CPUs do not share a cache line. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task_counts);
} task_totals SEC(".maps");

/* Events left out of tasks_by_cgroup because it was full. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tasks_lost SEC(".maps");

static __always_inline void count(__u64 cgroup_id, bool fork)
{
	__u32 zero_key = 0;
	struct task_counts *total = bpf_map_lookup_elem(&task_totals, &zero_key);
	if (total) {
		/*
		 * Atomic although per CPU: a program can be preempted by another task on
		 * the same CPU that forks too.
		 */
		if (fork)
			__sync_fetch_and_add(&total->forks, 1);
		else
			__sync_fetch_and_add(&total->exits, 1);
	}

	struct task_counts zero = {};
	struct task_counts *c = lookup_or_init(&tasks_by_cgroup, &cgroup_id, &zero);
	if (!c) {
		count_drop(&tasks_lost);
		return;
	}
	if (fork)
		__sync_fetch_and_add(&c->forks, 1);
	else
		__sync_fetch_and_add(&c->exits, 1);
}

/*
 * The child's own cgroup, which differs from the parent's when clone3 placed it
 * elsewhere (CLONE_INTO_CGROUP, as runc and systemd do).
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(task_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	count(task_cgroup_id(child), true);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(task_exit_btf, struct task_struct *task)
{
	count(task_cgroup_id(task), false);
	return 0;
}

/* Without BTF the child is out of reach: count the fork in the parent's cgroup. */
SEC("tracepoint/sched/sched_process_fork")
int task_fork_tp(void *ctx)
{
	count(bpf_get_current_cgroup_id(), true);
	return 0;
}

/* Exit runs in the exiting task. */
SEC("tracepoint/sched/sched_process_exit")
int task_exit_tp(void *ctx)
{
	count(bpf_get_current_cgroup_id(), false);
	return 0;
}
