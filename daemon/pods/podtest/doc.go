// Package podtest gives the pods packages' kernel tests what a container needs without
// images or a pod network: a root filesystem built from the host's static busybox, and
// uniquely named cgroup parents removed in every hierarchy at cleanup.
//
// It owns the directories and cgroups it creates for a test.
package podtest
