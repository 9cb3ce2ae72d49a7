// Package blocklat measures block I/O latency per disk, from the block:block_rq_issue
// and block:block_rq_complete tracepoints: how long each request took from issue to
// the driver until completion, kept in the kernel as a log2 histogram of microseconds
// per disk (a partition's requests count for its whole disk).
//
// It owns the BPF programs and maps it loads (released by Close). It touches the
// kernel through bpf/attach: the BPF syscall and tracefs.
package blocklat
