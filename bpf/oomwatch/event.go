package oomwatch

import (
	"context"
	"time"

	"github.com/plinth/plinth/bpf/attach"
)

// OOMKill is one victim of the kernel's OOM killer.
type OOMKill struct {
	// PID is the id of the task the kernel chose (a thread id when the process is
	// multi-threaded; the whole thread group is killed).
	PID int
	// Comm is the victim's command name, "" when unknown.
	Comm string
	// CgroupID is the victim's cgroup v2 id, 0 when unknown.
	CgroupID uint64
	// MemcgID is the id of the victim's memory cgroup (v1 on hybrid hosts), 0 when
	// unknown.
	MemcgID uint64
	// TriggerCgroupID is the cgroup v2 id of the task whose allocation made the kernel
	// kill; for a memory cgroup OOM it lies in the subtree whose limit was hit.
	TriggerCgroupID uint64
	// Details is nil when the kernel gave only the pid (plain tracepoint mode).
	Details *OOMDetails
	// Mode is the program variant that saw the kill.
	Mode attach.Mode
	// Seen is when plinthd read the event.
	Seen time.Time
}

// OOMDetails are what the tp_btf program reads from the victim's task_struct, the
// same figures the kernel prints in its OOM report.
type OOMDetails struct {
	TGID        int
	UID         uint32
	OOMScoreAdj int16
	// Memory in bytes.
	TotalVM, AnonRSS, FileRSS, ShmemRSS, PageTables uint64
}

// Source is what consumers of OOM kills need; *Watcher and *Fake implement it.
type Source interface {
	// OOMEvents delivers kills until ctx ends; see Watcher.OOMEvents.
	OOMEvents(ctx context.Context) <-chan OOMKill
	// Lost counts kills the kernel could not report because the buffer was full.
	Lost() (uint64, error)
}
