//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Block I/O latency per disk, from block:block_rq_issue to block:block_rq_complete: the
 * time a request spent in the device (and its driver), as a log2 histogram of
 * microseconds per disk.
 *
 * Disks are named like the tracepoints name them: the whole disk's dev_t in the
 * kernel's encoding (major << 20 | minor), 0 for requests without a disk.
 */
#include "plinth_tracing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define BLK_SLOTS 32
#define KERNEL_MINORBITS 20

/* slots[i] counts requests that took [2^i, 2^(i+1)) µs; slots[0] also those under 1 µs. */
struct blk_hist {
	__u64 slots[BLK_SLOTS];
	__u64 count;
	__u64 sum_ns;
};

struct rq_start {
	__u64 ts;
	__u32 dev;
	__u32 pad;
};

struct sector_key {
	__u32 dev;
	__u32 pad;
	__u64 sector;
};

/*
 * Issue times. LRU, because a request can be issued and never completed (requeued,
 * or in flight when the programs were loaded), and a full map must not stop new ones.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, struct rq_start);
} rq_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sector_key);
	__type(value, __u64);
} sector_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct blk_hist);
} blk_hists SEC(".maps");

/* Completions left out of blk_hists because it was full. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} blk_lost SEC(".maps");

static __always_inline void record(__u32 dev, __u64 start)
{
	__u64 delta = bpf_ktime_get_ns() - start;
	struct blk_hist zero = {};
	struct blk_hist *h = lookup_or_init(&blk_hists, &dev, &zero);
	if (!h) {
		count_drop(&blk_lost);
		return;
	}
	__u32 slot = log2_u64(delta / 1000);
	if (slot >= BLK_SLOTS)
		slot = BLK_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, delta);
}

/* What the tracepoints print as dev: the disk of the request's queue. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;
	if (!disk)
		return 0;
	return ((__u32)disk->major << KERNEL_MINORBITS) | (__u32)disk->first_minor;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue_btf, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_start s = { .ts = bpf_ktime_get_ns(), .dev = rq_dev(rq) };

	bpf_map_update_elem(&rq_starts, &key, &s, BPF_ANY);
	return 0;
}

/* Fires for each partial completion too; the first one ends the timing. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete_btf, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_start *s = bpf_map_lookup_elem(&rq_starts, &key);
	if (!s)
		return 0;
	__u64 start = s->ts;
	__u32 dev = s->dev;
	bpf_map_delete_elem(&rq_starts, &key);
	record(dev, start);
	return 0;
}

/* dev and sector lead both records, at the same places on every kernel version. */
struct block_rq_record {
	__u64 common;
	__u32 dev;
	__u32 pad;
	__u64 sector;
};

SEC("tracepoint/block/block_rq_issue")
int block_rq_issue_tp(struct block_rq_record *ctx)
{
	struct sector_key key = { .dev = ctx->dev, .sector = ctx->sector };
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&sector_starts, &key, &now, BPF_ANY);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int block_rq_complete_tp(struct block_rq_record *ctx)
{
	struct sector_key key = { .dev = ctx->dev, .sector = ctx->sector };
	__u64 *start = bpf_map_lookup_elem(&sector_starts, &key);
	if (!start)
		return 0;
	__u64 ts = *start;
	bpf_map_delete_elem(&sector_starts, &key);
	record(key.dev, ts);
	return 0;
}
