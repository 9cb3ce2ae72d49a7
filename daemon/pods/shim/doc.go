// Package shim is the small per-container process that lets containers outlive
// plinthd. The driver (daemon/pods/runc) starts it; it detaches into its own session,
// makes itself the child subreaper, runs `runc create` with pipes as the container's
// stdout and stderr, reports the container's init pid on a ready pipe, copies the
// pipes into the container's CRI log file, reaps the init process when it exits and
// writes its exit status to exit.json in the container's state directory, atomically,
// before it exits itself. plinthd can restart at any time in between: the shim keeps
// the log flowing and the exit status safe, and a new plinthd finds both through the
// state directory and waits for the shim through a pidfd.
//
// It owns the container's state directory files runc.log, init.pid and exit.json, and
// the CRI log file it appends to. It touches the kernel only to set itself subreaper.
package shim
