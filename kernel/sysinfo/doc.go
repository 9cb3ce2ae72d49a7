// Package sysinfo reads the node facts a Node object reports: memory size, CPU count,
// kernel release, OS image, machine and boot IDs, the DMI system UUID, and filesystem
// capacity.
//
// It owns nothing: every call opens, reads and closes. It touches /proc/meminfo,
// /proc/sys/kernel/random/boot_id, /etc/os-release (or /usr/lib/os-release),
// /etc/machine-id and /sys/class/dmi/id/product_uuid under a configurable root, plus
// the uname, sched_getaffinity and statfs system calls. The file parsers take an
// io.Reader so they are tested against fixtures in testdata.
package sysinfo
