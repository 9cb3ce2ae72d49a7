// Package runc drives the runc binary for plinthd: it creates containers from OCI
// bundles through a per-container shim (daemon/pods/shim), starts, signals, stops with
// a grace period, executes commands in, waits for and deletes them, and adopts the
// containers a previous plinthd left running.
//
// Why a shim: runc's detached containers are reparented away from whoever ran `runc
// create`, and their stdio must stay open when plinthd stops. The shim holds both, so
// plinthd can restart at any time (KillMode=process) without touching a workload. The
// shim is never plinthd's child; plinthd waits for it through a pidfd, checked against
// the shim's start time so a reused pid is never mistaken for it, and reads the exit
// status the shim wrote. runc and the shim run without the variables systemd's service
// protocols give plinthd (NOTIFY_SOCKET above all, which would make runc start wait for
// the container to notify readiness).
//
// It owns runc's state under Root (default /run/plinth/runc) and one checkpoint
// directory per container under StateDir (default /var/lib/plinth/checkpoints/<id>:
// checkpoint.json, the shim's runc.log, init.pid, exit.json and shim.log). Bundles and
// log files belong to the caller. It reads the container's memory cgroup (through
// kernel/cgroup) to tell an OOM kill from another SIGKILL.
package runc
