// Package cgroup reads the cgroups plinthd watches, on legacy (v1), hybrid and unified
// (v2) hosts: which mode the host runs (from the filesystem magic of /sys/fs/cgroup, as
// runc and kubelet detect it), the cgroups of a process from /proc/<pid>/cgroup, memory
// usage and working set the way kubelet computes them (usage minus inactive file), the
// memory limit, and pids.current/pids.max, for one cgroup and for the node's root.
//
// It owns nothing and writes nothing: every call opens, reads and closes. It touches
// files under the cgroup root (/sys/fs/cgroup by default), /proc/<pid>/cgroup and
// /proc/meminfo, plus statfs. Tests that need real cgroups create them with the
// cgrouptest subpackage.
package cgroup
