package tasks

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cilium/ebpf"

	"github.com/plinth/plinth/bpf/attach"
)

// Options configure Load. The zero value is usable.
type Options struct {
	// Mode picks the program variant; Auto prefers tp_btf.
	Mode attach.Mode
	// Logger gets load fallbacks; nil discards them.
	Logger *slog.Logger
}

// Counter has the fork and exit programs attached.
type Counter struct {
	set      *attach.Set
	totals   *ebpf.Map
	byCgroup *ebpf.Map
	lost     *ebpf.Map
}

var _ Source = (*Counter)(nil)

// Load loads and attaches the fork and exit programs. Close releases them.
func Load(opts Options) (*Counter, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spec, err := loadTasks()
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	set, err := attach.Load(spec, opts.Mode, log.With("bpf", "tasks"))
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	c := &Counter{set: set}
	c.totals, err = set.Map(tasksMapTaskTotals)
	if err == nil {
		c.byCgroup, err = set.Map(tasksMapTasksByCgroup)
	}
	if err == nil {
		c.lost, err = set.Map(tasksMapTasksLost)
	}
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("tasks: %w", err)
	}
	return c, nil
}

// Mode is the program variant that was loaded (tp_btf or tracepoint).
func (c *Counter) Mode() attach.Mode { return c.set.Mode }

// Stats returns each program's run count and run time, which the kernel accounts only
// while attach.EnableStats is in effect.
func (c *Counter) Stats() (map[string]attach.RunStats, error) { return c.set.Stats() }

// ForkCount is the number of tasks created on the node since Load.
func (c *Counter) ForkCount() (uint64, error) {
	t, err := c.Totals()
	return t.Forks, err
}

// Totals are the tasks created and exited on the node since Load.
func (c *Counter) Totals() (TaskCount, error) {
	var perCPU []tasksTaskCounts
	if err := c.totals.Lookup(uint32(0), &perCPU); err != nil {
		return TaskCount{}, fmt.Errorf("tasks: read totals: %w", err)
	}
	var t TaskCount
	for _, v := range perCPU {
		t.Forks += v.Forks
		t.Exits += v.Exits
	}
	return t, nil
}

// TaskCounts are the tasks created and exited since Load per cgroup v2 id, for
// cgroups with at least one.
func (c *Counter) TaskCounts() (map[uint64]TaskCount, error) {
	out := make(map[uint64]TaskCount)
	var (
		id uint64
		v  tasksTaskCounts
	)
	it := c.byCgroup.Iterate()
	for it.Next(&id, &v) {
		out[id] = TaskCount{Forks: v.Forks, Exits: v.Exits}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("tasks: read per-cgroup counts: %w", err)
	}
	return out, nil
}

// Forget drops the counts of a cgroup that no longer exists, making room in the map
// (16384 cgroups). Forgetting an unknown id is not an error.
func (c *Counter) Forget(cgroupID uint64) error {
	if err := c.byCgroup.Delete(cgroupID); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("tasks: forget cgroup %d: %w", cgroupID, err)
	}
	return nil
}

// Lost counts forks and exits left out of the per-cgroup counts because the map was
// full (the node-wide totals have them all).
func (c *Counter) Lost() (uint64, error) {
	var n uint64
	if err := c.lost.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("tasks: read loss counter: %w", err)
	}
	return n, nil
}

// Close detaches the programs.
func (c *Counter) Close() error { return c.set.Close() }
