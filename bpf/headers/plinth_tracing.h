/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Helpers shared by Plinth's tracing programs.
 *
 * Two kinds of program live side by side in each object: tp_btf programs, which read
 * kernel structures through BTF-typed pointers (CO-RE relocated against the running
 * kernel), and plain tracepoint programs, which use only helpers and the stable
 * leading fields of the tracepoint's record, so they load on kernels without BTF.
 * The Go loader picks one kind at load time (bpf/attach).
 */
#ifndef PLINTH_TRACING_H
#define PLINTH_TRACING_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define PLINTH_COMM_LEN 16

/*
 * The id of task's cgroup in the default hierarchy: the cgroup v2 tree, which on a
 * hybrid host is the one mounted at /sys/fs/cgroup/unified. It is the kernfs node id,
 * which is also the inode number of the cgroup's directory, and what
 * bpf_get_current_cgroup_id() returns for the current task.
 *
 * Only for BTF-typed task pointers (tp_btf arguments): the loads are checked by the
 * verifier against the kernel's own layout, and a NULL link on the way reads as 0.
 */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
	return task->cgroups->dfl_cgrp->kn->id;
}

/*
 * The id of the cgroup whose memory controller charges task: on a hybrid or v1 host
 * the task's cgroup in the v1 memory hierarchy (/sys/fs/cgroup/memory/...), on a pure
 * v2 host the nearest v2 ancestor with the memory controller enabled. Like
 * task_cgroup_id it is the inode number of that cgroup's directory. 0 when the kernel
 * has no memory controller.
 */
static __always_inline __u64 task_memcg_id(struct task_struct *task)
{
	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	int idx = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css = task->cgroups->subsys[idx];
	if (!css)
		return 0;
	return css->cgroup->kn->id;
}

/* floor(log2(v)) for v > 0, and 0 for v == 0. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/*
 * Returns the value for key in a hash map, inserting zero first when the key is new.
 * NULL only when the map is full.
 */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero)
{
	void *val = bpf_map_lookup_elem(map, key);
	if (val)
		return val;
	/* BPF_NOEXIST: another CPU may have inserted it meanwhile; keep theirs. */
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* Counts one event that could not be reported, in a one-slot array map. */
static __always_inline void count_drop(void *map)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(map, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
}

#endif /* PLINTH_TRACING_H */
