package tasks

import (
	"maps"
	"sync"
)

// TaskCount counts the tasks created in and exited from a cgroup, or the node.
type TaskCount struct {
	Forks, Exits uint64
}

// Live is Forks minus Exits: how many more tasks there are than at Load (negative
// when more exited than were created).
func (c TaskCount) Live() int64 { return int64(c.Forks - c.Exits) }

// Source is what consumers of task counts need; *Counter and *Fake implement it.
type Source interface {
	ForkCount() (uint64, error)
	Totals() (TaskCount, error)
	TaskCounts() (map[uint64]TaskCount, error)
}

// Fake is a Source for consumers' unit tests: it returns what was set.
type Fake struct {
	mu       sync.Mutex
	total    TaskCount
	byCgroup map[uint64]TaskCount
}

// NewFake returns a Fake that has counted nothing.
func NewFake() *Fake { return &Fake{byCgroup: map[uint64]TaskCount{}} }

// Set sets the counts for cgroupID and adds the change to the node-wide totals.
func (f *Fake) Set(cgroupID uint64, c TaskCount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.byCgroup[cgroupID]
	f.total.Forks += c.Forks - old.Forks
	f.total.Exits += c.Exits - old.Exits
	f.byCgroup[cgroupID] = c
}

// ForkCount returns the node-wide forks.
func (f *Fake) ForkCount() (uint64, error) {
	t, err := f.Totals()
	return t.Forks, err
}

// Totals returns the node-wide counts.
func (f *Fake) Totals() (TaskCount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total, nil
}

// TaskCounts returns a copy of the per-cgroup counts.
func (f *Fake) TaskCounts() (map[uint64]TaskCount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.byCgroup), nil
}
