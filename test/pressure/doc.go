// Package pressure tests and measures plinthd's pressure handling on the real kernel:
// memory hogs in memory-limited cgroups standing for the pods' allocatable memory,
// loop-mounted filesystems filled up, tasks spawned against a lowered PID threshold;
// through the pressure manager with the real kernel adapters in-process, and through
// the real plinthd and plinth-control binaries, watching the Node with client-go.
// Its benchmarks produce the pressure numbers of docs/benchmarks.md.
//
// It touches only what it creates: uniquely named cgroups (kernel/cgroup/cgrouptest),
// loop devices and mounts under temporary directories, loopback ports and the
// processes it starts, all removed when a test ends, even on failure.
package pressure
