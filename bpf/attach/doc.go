// Package attach loads Plinth's tracing objects and attaches their programs, choosing
// between the two variants each object carries: tp_btf programs, which read the kernel
// structures a tracepoint passes through BTF (CO-RE against /sys/kernel/btf/vmlinux),
// and plain tracepoint programs, which use only the record's stable fields and helpers
// and so also load on kernels without BTF or with older tracepoint arguments.
//
// It also mounts tracefs (plain tracepoints look up their ids there) and bpffs when
// they are missing.
//
// It owns the links and the collection it returns in a Set, which the caller closes.
// It touches the BPF syscall, /sys/kernel/tracing (or /sys/kernel/debug/tracing),
// /sys/fs/bpf, the process's RLIMIT_MEMLOCK (raised only on kernels that still charge
// BPF memory to it, before 5.11) and, through mount(2), the mount namespace it runs in.
package attach
