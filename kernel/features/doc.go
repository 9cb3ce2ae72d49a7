// Package features probes what the running kernel offers Plinth: its version and
// command line and (where published) build configuration, BTF for CO-RE, PSI (present,
// and enabled or disabled at boot), the cgroup mode and controllers, swap areas and swap
// accounting, sysctls, user namespaces, conntrack, tracefs and the tracepoints the BPF
// programs attach to (plain and tp_btf), BPF ring buffers and program types, bpffs,
// seccomp filters with their actions, and nftables over netlink. Each probe returns a
// Result (or plain facts) with a reason a person can act on; daemon/preflight turns them
// into `plinthctl check` and plinthd's start-up checks, and internal/kerneltest uses the
// same probes to decide which kernel tests can run.
//
// It owns nothing. It reads under /proc, /sys and /boot (paths set in System, so tests
// point them at fixture trees: NewSystem(root)); the running System's probes also ask
// the kernel through the BPF syscall (creating and freeing a ring buffer and trivial
// programs) and netlink (a table in a fresh network namespace owned by a thread that
// dies with it), and MountTracefs and MountBPFFS mount tracefs and bpffs when asked.
// Cgroup mode detection is kernel/cgroup's DetectMode.
package features
