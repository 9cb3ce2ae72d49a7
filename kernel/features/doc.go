// Package features probes what the running kernel offers plinthd: its version, BTF for
// CO-RE, PSI (present and enabled), the cgroup mode, tracefs and the tracepoints the BPF
// programs attach to, bpffs, BPF ring buffers, and seccomp filters with their actions.
// Each probe returns a Result with a reason a person can act on; Probe gathers them into
// a Report for `plinthctl check` and for plinthd to decide which pressure signals it can
// use.
//
// It owns nothing. It reads under /proc and /sys (paths set in System, so tests point
// them at fixture trees with a fake statfs), and MountTracefs and MountBPFFS mount
// tracefs and bpffs when asked. Cgroup mode detection is kernel/cgroup's DetectMode.
package features
