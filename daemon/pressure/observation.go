package pressure

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// SignalSource takes one observation of the node. It is called on every evaluation
// (at least once per evaluation interval, and at once on every wakeup), so it should
// only read what is cheap to read: /proc/meminfo, the root and pods cgroups' memory
// figures, statfs of the two filesystems, the pid limits and the task count.
//
// A part it cannot read is left nil and its feed reported inactive; the thresholds on
// that part's signals are then not evaluated. An error means nothing could be read.
// The manager keeps what Observe returns (for Snapshot), so the source must not change
// it afterwards.
type SignalSource interface {
	Observe(ctx context.Context) (Observations, error)
}

// Trigger names why an evaluation ran; it is the trigger label of
// plinth_eviction_evaluations_total, so senders should use the constants below or a
// few fixed words of their own, never per-event text.
type Trigger string

// Triggers of evaluation. The first four come from event sources (kernel/psi and
// bpf/) through Wakeups; the rest are the manager's own.
const (
	TriggerPSI          Trigger = "psi"           // a PSI trigger fired
	TriggerReclaimStall Trigger = "reclaim-stall" // a burst of direct-reclaim stall time
	TriggerOOMKill      Trigger = "oom-kill"      // the kernel OOM killer chose a victim
	TriggerForkBurst    Trigger = "fork-burst"    // a burst of process creation

	TriggerStart        Trigger = "start"         // the first evaluation of Run
	TriggerPeriodic     Trigger = "periodic"      // the evaluation interval passed without a wakeup
	TriggerEvictionStep Trigger = "eviction-step" // a reclaim finished or an evicted pod went
)

// Wakeups delivers event-driven hints that the node's pressure may have changed; each
// one makes the manager evaluate at once instead of waiting for the periodic floor.
// Hints queued while an evaluation runs are merged into the next one. The sender owns
// the channel and may close it, after which only the periodic floor remains.
type Wakeups <-chan Trigger

// Observations is one reading of the node. Nil parts were not available.
type Observations struct {
	// Memory is the node's memory; it gives memory.available.
	Memory *MemoryStats
	// AllocatableMemory is memory available to pods; it gives
	// allocatableMemory.available.
	AllocatableMemory *AllocatableMemoryStats
	// Nodefs is the filesystem of plinthd's state directory (pods' writable data,
	// logs, emptyDirs); Imagefs the filesystem holding images. They may be the same
	// filesystem, in which case both carry the same figures and both sets of
	// thresholds apply, as with kubelet on a node without a dedicated image disk.
	Nodefs, Imagefs *FilesystemStats
	// PIDs gives pid.available.
	PIDs *PIDStats
	// Feeds say which sources of information are working, for condition messages,
	// metrics and plinthctl: polled ones (meminfo, cgroup, statfs, pids) and
	// event-driven ones (psi, ebpf-oom, ebpf-reclaim, ebpf-fork).
	Feeds []Feed
}

// MemoryStats is the node's memory, in bytes.
type MemoryStats struct {
	// CapacityBytes is MemTotal; 0 means unknown, and memory.available is then not
	// evaluated.
	CapacityBytes uint64
	// MemAvailableBytes is MemAvailable from /proc/meminfo, valid when HasMemAvailable.
	MemAvailableBytes uint64
	HasMemAvailable   bool
	// WorkingSetBytes is the root cgroup's usage minus its inactive file pages, as
	// kubelet computes the working set, valid when HasWorkingSet.
	WorkingSetBytes uint64
	HasWorkingSet   bool
}

// AllocatableMemoryStats is the memory pods may use, in bytes.
type AllocatableMemoryStats struct {
	// AllocatableBytes is the node's allocatable memory (capacity minus reserved).
	AllocatableBytes uint64
	// WorkingSetBytes is the working set of the cgroup holding every pod.
	WorkingSetBytes uint64
}

// FilesystemStats is the size and use of one filesystem, from statfs. It has the
// fields of kernel/sysinfo.Filesystem, in the same order, so one converts to the other.
type FilesystemStats struct {
	CapacityBytes uint64
	// AvailableBytes is what unprivileged writers may still use (f_bavail).
	AvailableBytes uint64
	// Inodes is 0 on filesystems without a fixed inode count (btrfs), whose inode
	// signals are then not evaluated.
	Inodes     uint64
	InodesFree uint64
}

// PIDStats are the kernel's process ID limits and use.
type PIDStats struct {
	// PIDMax is /proc/sys/kernel/pid_max and ThreadsMax /proc/sys/kernel/threads-max;
	// a 0 is unknown and ignored.
	PIDMax, ThreadsMax uint64
	// Tasks is the number of tasks (threads) on the node.
	Tasks uint64
}

// Feed is one source of information and whether it works.
type Feed struct {
	// Name is short and stable, such as "meminfo", "psi" or "ebpf-oom"; it appears in
	// condition messages and as the feed label of plinth_eviction_feed_active.
	Name string
	// Conditions are the conditions the feed informs; a condition's message lists the
	// feeds that inform it.
	Conditions []corev1.NodeConditionType
	// Active is false when the feed is missing or failed (no PSI, no BTF, ...).
	Active bool
	// Detail says why an inactive feed is inactive.
	Detail string
}

// Sample is one signal's value in one observation.
type Sample struct {
	// Available is the amount left; it can be negative (a working set above
	// allocatable memory).
	Available int64
	// Capacity is what percentage thresholds are taken of.
	Capacity int64
	// Basis says how Available was obtained when there was a choice.
	Basis string
}

// How memory.available was obtained.
const (
	BasisMemAvailable = "MemAvailable"
	BasisWorkingSet   = "capacity - working set"
)

// Samples computes the signals from the observations; a signal whose data is missing
// has no entry.
//
// memory.available is the smaller of MemAvailable and capacity minus working set when
// both are known. The two disagree in both directions: MemAvailable counts active
// page cache as available, which the working set counts as used, so the working-set
// view (kubelet's) sees pressure first on a node full of hot cache; but the root
// cgroup's working set misses memory the kernel uses outside cgroups (unreclaimable
// slab, page tables of early processes), which MemAvailable sees. Taking the smaller
// reacts to whichever shows pressure first, which is the point of measuring both; the
// cost is pressure that kubelet would report a little later.
func (o Observations) Samples() map[Signal]Sample {
	out := map[Signal]Sample{}
	if m := o.Memory; m != nil && m.CapacityBytes > 0 && (m.HasMemAvailable || m.HasWorkingSet) {
		capacity := clampInt64(m.CapacityBytes)
		s := Sample{Capacity: capacity}
		if m.HasWorkingSet {
			s.Available, s.Basis = capacity-clampInt64(m.WorkingSetBytes), BasisWorkingSet
		}
		if m.HasMemAvailable {
			if ma := clampInt64(m.MemAvailableBytes); !m.HasWorkingSet || ma < s.Available {
				s.Available, s.Basis = ma, BasisMemAvailable
			}
		}
		out[SignalMemoryAvailable] = s
	}
	if a := o.AllocatableMemory; a != nil && a.AllocatableBytes > 0 {
		capacity := clampInt64(a.AllocatableBytes)
		out[SignalAllocatableMemoryAvailable] = Sample{Available: capacity - clampInt64(a.WorkingSetBytes), Capacity: capacity}
	}
	addFilesystem(out, o.Nodefs, SignalNodefsAvailable, SignalNodefsInodesFree)
	addFilesystem(out, o.Imagefs, SignalImagefsAvailable, SignalImagefsInodesFree)
	if p := o.PIDs; p != nil {
		limit := p.PIDMax
		if limit == 0 || (p.ThreadsMax > 0 && p.ThreadsMax < limit) {
			limit = p.ThreadsMax
		}
		if limit > 0 {
			capacity := clampInt64(limit)
			out[SignalPIDAvailable] = Sample{Available: capacity - clampInt64(p.Tasks), Capacity: capacity}
		}
	}
	return out
}

func addFilesystem(out map[Signal]Sample, fs *FilesystemStats, bytes, inodes Signal) {
	if fs == nil {
		return
	}
	if fs.CapacityBytes > 0 {
		out[bytes] = Sample{Available: clampInt64(fs.AvailableBytes), Capacity: clampInt64(fs.CapacityBytes)}
	}
	if fs.Inodes > 0 {
		out[inodes] = Sample{Available: clampInt64(fs.InodesFree), Capacity: clampInt64(fs.Inodes)}
	}
}

// clampInt64 converts a kernel counter to int64; nothing real exceeds 2^63, but a
// corrupt reading must not wrap to a negative amount.
func clampInt64(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}
