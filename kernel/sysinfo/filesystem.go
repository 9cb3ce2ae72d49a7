package sysinfo

// Filesystem is the size and usage of one mounted filesystem.
type Filesystem struct {
	CapacityBytes uint64
	// AvailableBytes is what unprivileged writers may still use (f_bavail), the
	// figure eviction thresholds are measured against.
	AvailableBytes uint64
	Inodes         uint64
	InodesFree     uint64
}
