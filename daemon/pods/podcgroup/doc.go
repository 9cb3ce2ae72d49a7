// Package podcgroup owns the per-pod cgroups, <parent>/pod<uid> (parent /plinth by
// default), that hold a pod's containers (runc creates each container's cgroup below
// it from the spec's cgroupsPath): it computes the pod-level limits as kubelet does and
// creates, updates and removes the cgroup in every hierarchy through
// github.com/opencontainers/cgroups, on hybrid (v1 controllers plus the unified tree)
// and on pure cgroup v2 hosts.
//
// Resources is pure; Manager touches /sys/fs/cgroup through the library only.
package podcgroup
