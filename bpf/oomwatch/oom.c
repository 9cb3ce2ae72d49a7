//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * OOM kills, from the oom:mark_victim tracepoint, which fires once per victim when the
 * kernel (global or memory-cgroup OOM killer) has chosen it and sent SIGKILL.
 */
#include "plinth_tracing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum oom_event_flags {
	/* The tp_btf program read pid, tgid, uid, oom_score_adj and memory from the victim. */
	OOM_DETAILS = 1,
	/* cgroup_id and memcg_id are the victim's (else unknown and 0). */
	OOM_VICTIM_CGROUP = 2,
};

struct oom_event {
	/* Victim's cgroup v2 id and memory cgroup id (see plinth_tracing.h). */
	__u64 cgroup_id;
	__u64 memcg_id;
	/* cgroup v2 id of the task whose allocation made the kernel kill. */
	__u64 trigger_cgroup_id;
	/* In pages, except pgtables_bytes; the same figures the tracepoint prints. */
	__u64 total_vm_pages;
	__u64 anon_rss_pages;
	__u64 file_rss_pages;
	__u64 shmem_rss_pages;
	__u64 pgtables_bytes;
	__u32 pid;
	__u32 tgid;
	__u32 uid;
	__s16 oom_score_adj;
	__u16 flags;
	char comm[PLINTH_COMM_LEN];
};

/* Makes struct oom_event part of the object's BTF, so bpf2go -type finds it. */
const struct oom_event *unused_oom_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} oom_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} oom_dropped SEC(".maps");

static __always_inline struct oom_event *reserve_event(void)
{
	struct oom_event *e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);
	if (!e) {
		count_drop(&oom_dropped);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->trigger_cgroup_id = bpf_get_current_cgroup_id();
	return e;
}

static __always_inline __u64 rss_pages(struct mm_struct *mm, int member)
{
	/*
	 * Since 6.2 each counter is a percpu_counter; like get_mm_counter() (and so the
	 * tracepoint's own figures) read its central count, which lags the per-CPU
	 * deltas by at most a batch per CPU. The indexes (an anonymous enum in the
	 * kernel, so not relocatable) have kept their values since they were added.
	 */
	__s64 n = mm->rss_stat[member].count;
	return n > 0 ? n : 0;
}

/*
 * Recent kernels pass the victim's task_struct. On older ones (6.1) the argument is the
 * pid alone, the verifier refuses the dereferences below, and the loader falls back to
 * the plain tracepoint.
 */
SEC("tp_btf/mark_victim")
int BPF_PROG(oom_mark_victim_btf, struct task_struct *task)
{
	struct oom_event *e = reserve_event();
	if (!e)
		return 0;

	e->pid = task->pid;
	e->tgid = task->tgid;
	e->uid = task->real_cred->uid.val;
	e->oom_score_adj = task->signal->oom_score_adj;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), task->comm);
	e->cgroup_id = task_cgroup_id(task);
	e->memcg_id = task_memcg_id(task);
	e->flags = OOM_DETAILS | OOM_VICTIM_CGROUP;

	/* mark_victim runs with the victim's task lock held and its mm still set. */
	struct mm_struct *mm = task->mm;
	if (mm) {
		e->total_vm_pages = mm->total_vm;
		e->anon_rss_pages = rss_pages(mm, MM_ANONPAGES);
		e->file_rss_pages = rss_pages(mm, MM_FILEPAGES);
		e->shmem_rss_pages = rss_pages(mm, MM_SHMEMPAGES);
		e->pgtables_bytes = mm->pgtables_bytes.counter;
	}

	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* The record's only field on every kernel version; later fields come and go. */
struct mark_victim_record {
	__u64 common;
	int pid;
};

SEC("tracepoint/oom/mark_victim")
int oom_mark_victim_tp(struct mark_victim_record *ctx)
{
	struct oom_event *e = reserve_event();
	if (!e)
		return 0;

	e->pid = ctx->pid;
	/*
	 * Without BTF the victim's task is out of reach, but the victim is often the
	 * task whose allocation failed (always when a lone process outgrows its memory
	 * cgroup): then the current task's comm and cgroup are the victim's.
	 */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)pid_tgid == (__u32)e->pid) {
		e->tgid = pid_tgid >> 32;
		bpf_get_current_comm(e->comm, sizeof(e->comm));
		e->cgroup_id = e->trigger_cgroup_id;
		e->flags = OOM_VICTIM_CGROUP;
	}

	bpf_ringbuf_submit(e, 0);
	return 0;
}
