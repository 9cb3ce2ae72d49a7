//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Reclaim stall time: how long tasks wait in reclaim inside their own allocations,
 * summed per cgroup v2 id, with a ring-buffer event for each single stall longer than
 * a threshold.
 *
 * Two kinds of synchronous reclaim are timed, from their begin/end tracepoints:
 *  - direct reclaim (vmscan:mm_vmscan_direct_reclaim_*), when the node is short of
 *    memory (try_to_free_pages);
 *  - memory cgroup limit reclaim (vmscan:mm_vmscan_memcg_reclaim_*), when an
 *    allocation would take a cgroup over its limit (try_to_free_mem_cgroup_pages). On
 *    a host where pods have limits, this is the stall that precedes a cgroup OOM kill;
 *    direct reclaim does not fire for it.
 * Both begin and end run in the stalling task, so the current task's cgroup is the
 * stalled cgroup.
 */
#include "plinth_tracing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum reclaim_kind {
	RECLAIM_DIRECT = 0,
	RECLAIM_MEMCG = 1,
};

/* Set by the loader: a single stall at least this long is reported as a burst; 0 never. */
const volatile __u64 burst_threshold_ns = 0;

struct reclaim_start {
	__u32 tid;
	__u32 kind;
};

struct cgroup_reclaim {
	__u64 direct_ns;
	__u64 direct_count;
	__u64 memcg_ns;
	__u64 memcg_count;
};

struct stall_burst {
	__u64 cgroup_id;
	__u64 duration_ns;
	__u64 nr_reclaimed;
	__u32 pid;
	__u32 tgid;
	__u32 kind;
	__u32 pad;
	char comm[PLINTH_COMM_LEN];
};

/* Makes struct stall_burst part of the object's BTF, so bpf2go -type finds it. */
const struct stall_burst *unused_stall_burst __attribute__((unused));

/* When each task in reclaim began it. LRU: a begin whose end we never see ages out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct reclaim_start);
	__type(value, __u64);
} reclaim_starts SEC(".maps");

/* Totals per cgroup v2 id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct cgroup_reclaim);
} reclaim_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} reclaim_bursts SEC(".maps");

/* [0]: bursts lost to a full ring buffer; [1]: stalls lost to a full totals map. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} reclaim_dropped SEC(".maps");

static __always_inline void count_lost(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&reclaim_dropped, &slot);
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void reclaim_begin(__u32 kind)
{
	struct reclaim_start key = { .tid = (__u32)bpf_get_current_pid_tgid(), .kind = kind };
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&reclaim_starts, &key, &now, BPF_ANY);
}

static __always_inline void reclaim_end(__u32 kind, __u64 nr_reclaimed)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct reclaim_start key = { .tid = (__u32)pid_tgid, .kind = kind };
	__u64 *start = bpf_map_lookup_elem(&reclaim_starts, &key);
	if (!start)
		return;
	__u64 delta = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&reclaim_starts, &key);

	__u64 cgroup_id = bpf_get_current_cgroup_id();
	struct cgroup_reclaim zero = {};
	struct cgroup_reclaim *stat = lookup_or_init(&reclaim_totals, &cgroup_id, &zero);
	if (!stat) {
		count_lost(1);
	} else if (kind == RECLAIM_DIRECT) {
		__sync_fetch_and_add(&stat->direct_ns, delta);
		__sync_fetch_and_add(&stat->direct_count, 1);
	} else {
		__sync_fetch_and_add(&stat->memcg_ns, delta);
		__sync_fetch_and_add(&stat->memcg_count, 1);
	}

	if (burst_threshold_ns == 0 || delta < burst_threshold_ns)
		return;
	struct stall_burst *b = bpf_ringbuf_reserve(&reclaim_bursts, sizeof(*b), 0);
	if (!b) {
		count_lost(0);
		return;
	}
	b->cgroup_id = cgroup_id;
	b->duration_ns = delta;
	b->nr_reclaimed = nr_reclaimed;
	b->pid = (__u32)pid_tgid;
	b->tgid = pid_tgid >> 32;
	b->kind = kind;
	b->pad = 0;
	bpf_get_current_comm(b->comm, sizeof(b->comm));
	bpf_ringbuf_submit(b, 0);
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(direct_reclaim_begin_btf)
{
	reclaim_begin(RECLAIM_DIRECT);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(direct_reclaim_end_btf, unsigned long nr_reclaimed)
{
	reclaim_end(RECLAIM_DIRECT, nr_reclaimed);
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_reclaim_begin_btf)
{
	reclaim_begin(RECLAIM_MEMCG);
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_reclaim_end_btf, unsigned long nr_reclaimed)
{
	reclaim_end(RECLAIM_MEMCG, nr_reclaimed);
	return 0;
}

/* The end records' one field, at the same place on every kernel version. */
struct reclaim_end_record {
	__u64 common;
	unsigned long nr_reclaimed;
};

SEC("tracepoint/vmscan/mm_vmscan_direct_reclaim_begin")
int direct_reclaim_begin_tp(void *ctx)
{
	reclaim_begin(RECLAIM_DIRECT);
	return 0;
}

SEC("tracepoint/vmscan/mm_vmscan_direct_reclaim_end")
int direct_reclaim_end_tp(struct reclaim_end_record *ctx)
{
	reclaim_end(RECLAIM_DIRECT, ctx->nr_reclaimed);
	return 0;
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin")
int memcg_reclaim_begin_tp(void *ctx)
{
	reclaim_begin(RECLAIM_MEMCG);
	return 0;
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_end")
int memcg_reclaim_end_tp(struct reclaim_end_record *ctx)
{
	reclaim_end(RECLAIM_MEMCG, ctx->nr_reclaimed);
	return 0;
}
