// Package pressuresignals feeds daemon/pressure from the Linux kernel. It implements
// pressure.SignalSource over /proc/meminfo, the root and pods cgroups' memory
// (kernel/cgroup), statfs of the nodefs and imagefs directories (kernel/sysinfo), and
// the pid limits and task count under /proc; and it fans the event sources that make
// the pressure manager evaluate at once into one pressure.Wakeups channel: PSI
// triggers (kernel/psi) on the node's and the pods cgroup's memory.pressure, OOM
// kills (bpf/oomwatch), reclaim stall bursts (bpf/reclaim), fork bursts (bpf/tasks),
// and its own prediction that a falling signal is about to cross a threshold.
//
// Every event source is best effort: one that cannot be set up (no PSI, no BTF, no
// tracefs, not root) is reported as an inactive feed with the reason, and the rest
// keep working; the polled signals alone still give the pressure conditions.
//
// It also reports what those sources see beyond pressure: a Kubernetes Event on the
// Node for every OOM kill (reason SystemOOM, like kubelet), plinth_oom_kills_total,
// plinth_direct_reclaim_seconds_total and plinth_node_psi_*_seconds_total. It offers
// two pressure.PodListers: RuntimePods, the pods plinthd's runtime runs with their pod
// cgroups' usage, and for a plinthd that runs no pods, APIPods over the API (the pods
// bound to this node), which is also a pressure.Evictor (the eviction subresource).
//
// It owns the PSI trigger file descriptors and BPF objects it opens and the
// goroutines it starts, all released by Signals.Close. It reads /proc, /sys/fs/cgroup
// (the pods cgroup and the pod cgroups under it too) and the filesystems it is pointed at; it writes only PSI trigger specifications into
// pressure files, and through the API only Events and Evictions.
package pressuresignals
