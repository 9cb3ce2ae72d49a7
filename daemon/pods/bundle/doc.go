// Package bundle turns one container of a pod into an OCI runtime spec (config.json of
// an OCI bundle) for runc: process arguments with the image's entrypoint and cmd as
// Kubernetes combines them, environment with $(VAR) expansion, working directory, user
// and groups, capabilities, no_new_privs, namespaces, mounts (the runtime's standard
// filesystems, the pod's hosts, resolv.conf and hostname files, its shared /dev/shm,
// volumes and the termination-log file), cgroup resources, rlimits, OOM score, sysctls,
// seccomp and the masked and read-only paths runtimes hide from containers.
//
// It is pure: everything it needs about the host (the pod's namespaces and files, the
// prepared volume directories, the resolved seccomp profile, the image's users) comes
// in through Input, and Build returns a value or an error naming the field and value it
// cannot turn into a spec. It owns nothing and touches nothing; LookupUsers is the one
// helper that reads files (a root filesystem's /etc/passwd and /etc/group).
package bundle
