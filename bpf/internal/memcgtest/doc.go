// Package memcgtest gives the BPF kernel tests a uniquely named, memory-limited cgroup
// and a memory hog to run in it: on a hybrid host a v1 memory cgroup carrying the
// limit plus a cgroup in the unified v2 tree, on a pure v2 host one v2 cgroup with
// memory.max.
//
// It owns the cgroups and processes it creates and removes them in t.Cleanup, even
// when the test fails. It touches /sys/fs/cgroup only.
package memcgtest
