// Package nodelock makes sure only one plinthd runs per node: Acquire takes an exclusive
// flock(2) on the lock file (default /run/plinth/plinthd.lock) and writes the holder's
// pid into it, so a second plinthd fails at start with an error naming the first one.
//
// The lock belongs to the open file description, so the kernel releases it when the
// holder exits or crashes; a stale pid left in the file is harmless because the next
// Acquire takes the lock and overwrites it. The descriptor is close-on-exec, so runc
// and other children never inherit the lock.
//
// It touches only the lock file and creates its parent directory.
package nodelock
