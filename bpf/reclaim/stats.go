package reclaim

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/plinth/plinth/bpf/attach"
)

// DefaultBurstThreshold is the stall length reported as a burst when Options leave it 0.
const DefaultBurstThreshold = 100 * time.Millisecond

// Kind is a kind of synchronous reclaim.
type Kind uint32

const (
	// Direct is reclaim for lack of free memory on the node (try_to_free_pages).
	Direct Kind = 0
	// Memcg is reclaim to stay within a memory cgroup's limit (try_to_free_mem_cgroup_pages).
	Memcg Kind = 1
)

// String returns "direct" or "memcg".
func (k Kind) String() string {
	switch k {
	case Direct:
		return "direct"
	case Memcg:
		return "memcg"
	}
	return "unknown"
}

// ReclaimStat is the stall time a cgroup's tasks spent in reclaim since Load.
type ReclaimStat struct {
	DirectStall time.Duration
	DirectCount uint64
	MemcgStall  time.Duration
	MemcgCount  uint64
}

// Stall is the total time in both kinds of reclaim.
func (s ReclaimStat) Stall() time.Duration { return s.DirectStall + s.MemcgStall }

// StallBurst is one stall in reclaim at least as long as the burst threshold.
type StallBurst struct {
	// CgroupID is the stalled task's cgroup v2 id.
	CgroupID uint64
	// PID is the thread that stalled, TGID its process.
	PID, TGID int
	Comm      string
	Kind      Kind
	Duration  time.Duration
	// Reclaimed is how many pages that reclaim freed.
	Reclaimed uint64
	// Mode is the program variant that saw the stall.
	Mode attach.Mode
	// Seen is when plinthd read the event.
	Seen time.Time
}

// Lost counts what the programs could not record.
type Lost struct {
	// Bursts lost because the ring buffer was full.
	Bursts uint64
	// Stalls left out of the totals because the per-cgroup map was full.
	Stalls uint64
}

// Source is what consumers of reclaim stalls need; *Tracker and *Fake implement it.
type Source interface {
	ReclaimTotals() (map[uint64]ReclaimStat, error)
	StallBursts(ctx context.Context) <-chan StallBurst
	Lost() (Lost, error)
}

// Fake is a Source for consumers' unit tests.
type Fake struct {
	mu     sync.Mutex
	totals map[uint64]ReclaimStat
	lost   Lost
	bursts chan StallBurst
}

// NewFake returns a Fake with no stalls whose StallBursts channel buffers 64 bursts.
func NewFake() *Fake {
	return &Fake{totals: map[uint64]ReclaimStat{}, bursts: make(chan StallBurst, 64)}
}

// SetTotals sets the stats ReclaimTotals returns for cgroupID.
func (f *Fake) SetTotals(cgroupID uint64, s ReclaimStat) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.totals[cgroupID] = s
}

// Burst queues b for the consumer of StallBursts; it blocks when 64 are waiting.
func (f *Fake) Burst(b StallBurst) { f.bursts <- b }

// SetLost sets what Lost returns.
func (f *Fake) SetLost(l Lost) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = l
}

// ReclaimTotals returns a copy of what SetTotals set.
func (f *Fake) ReclaimTotals() (map[uint64]ReclaimStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.totals), nil
}

// StallBursts returns the channel Burst sends on; it is not closed when ctx ends.
func (f *Fake) StallBursts(ctx context.Context) <-chan StallBurst { return f.bursts }

// Lost returns what SetLost set.
func (f *Fake) Lost() (Lost, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost, nil
}
