package reclaim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cilium/ebpf"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/internal/ringevents"
)

// Options configure Load. The zero value is usable.
type Options struct {
	// Mode picks the program variant; Auto prefers tp_btf.
	Mode attach.Mode
	// BurstThreshold is the shortest single stall StallBursts reports: 0 means
	// DefaultBurstThreshold, a negative value reports none.
	BurstThreshold time.Duration
	// Logger gets load fallbacks and read errors; nil discards them.
	Logger *slog.Logger
	// Clock stamps StallBurst.Seen; nil means the real clock.
	Clock clock.PassiveClock
}

// Tracker has the reclaim programs attached.
type Tracker struct {
	set    *attach.Set
	totals *ebpf.Map
	lost   *ebpf.Map
	bursts *ringevents.Reader[StallBurst]
}

var _ Source = (*Tracker)(nil)

// Load loads and attaches the reclaim programs. Close releases them.
func Load(opts Options) (*Tracker, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("bpf", "reclaim")
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	threshold := opts.BurstThreshold
	switch {
	case threshold == 0:
		threshold = DefaultBurstThreshold
	case threshold < 0:
		threshold = 0 // the program's "never"
	}

	spec, err := loadReclaim()
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	if err := spec.Variables[reclaimVarBurstThresholdNs].Set(uint64(threshold)); err != nil {
		return nil, fmt.Errorf("reclaim: set burst threshold %v: %w", threshold, err)
	}
	set, err := attach.Load(spec, opts.Mode, log)
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	t := &Tracker{set: set}
	t.totals, err = set.Map(reclaimMapReclaimTotals)
	if err == nil {
		t.lost, err = set.Map(reclaimMapReclaimDropped)
	}
	var ring *ebpf.Map
	if err == nil {
		ring, err = set.Map(reclaimMapReclaimBursts)
	}
	if err == nil {
		mode := set.Mode
		decode := func(b []byte) (StallBurst, error) {
			s, err := decodeBurst(b)
			s.Mode, s.Seen = mode, clk.Now()
			return s, err
		}
		t.bursts, err = ringevents.New(ring, decode, log)
	}
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	return t, nil
}

// Mode is the program variant that was loaded (tp_btf or tracepoint).
func (t *Tracker) Mode() attach.Mode { return t.set.Mode }

// Stats returns each program's run count and run time, which the kernel accounts only
// while attach.EnableStats is in effect.
func (t *Tracker) Stats() (map[string]attach.RunStats, error) { return t.set.Stats() }

// ReclaimTotals returns the stall time per cgroup v2 id since Load, for cgroups that
// stalled at least once.
func (t *Tracker) ReclaimTotals() (map[uint64]ReclaimStat, error) {
	out := make(map[uint64]ReclaimStat)
	var (
		id uint64
		v  reclaimCgroupReclaim
	)
	it := t.totals.Iterate()
	for it.Next(&id, &v) {
		out[id] = ReclaimStat{
			DirectStall: time.Duration(v.DirectNs),
			DirectCount: v.DirectCount,
			MemcgStall:  time.Duration(v.MemcgNs),
			MemcgCount:  v.MemcgCount,
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reclaim: read totals: %w", err)
	}
	return out, nil
}

// Forget drops the totals of a cgroup that no longer exists, making room in the map
// (16384 cgroups). Forgetting an unknown id is not an error.
func (t *Tracker) Forget(cgroupID uint64) error {
	if err := t.totals.Delete(cgroupID); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("reclaim: forget cgroup %d: %w", cgroupID, err)
	}
	return nil
}

// StallBursts delivers stalls longer than the burst threshold until ctx ends or Close
// is called, then closes the channel. Call it once: the ring buffer has one consumer,
// later calls get a closed channel. Bursts happening while nobody receives wait in a
// 256 KiB ring buffer (about 3000), and beyond that are counted by Lost.
func (t *Tracker) StallBursts(ctx context.Context) <-chan StallBurst { return t.bursts.Events(ctx) }

// Lost counts what the programs could not record.
func (t *Tracker) Lost() (Lost, error) {
	var l Lost
	if err := t.lost.Lookup(uint32(0), &l.Bursts); err != nil {
		return Lost{}, fmt.Errorf("reclaim: read loss counters: %w", err)
	}
	if err := t.lost.Lookup(uint32(1), &l.Stalls); err != nil {
		return Lost{}, fmt.Errorf("reclaim: read loss counters: %w", err)
	}
	return l, nil
}

// Close stops the burst reader and detaches the programs.
func (t *Tracker) Close() error {
	return errors.Join(t.bursts.Close(), t.set.Close())
}

func decodeBurst(b []byte) (StallBurst, error) {
	var e reclaimStallBurst
	if err := binary.Read(bytes.NewReader(b), binary.NativeEndian, &e); err != nil {
		return StallBurst{}, fmt.Errorf("stall burst event of %d bytes: %w", len(b), err)
	}
	return StallBurst{
		CgroupID:  e.CgroupId,
		PID:       int(e.Pid),
		TGID:      int(e.Tgid),
		Comm:      ringevents.Comm(e.Comm),
		Kind:      Kind(e.Kind),
		Duration:  time.Duration(e.DurationNs),
		Reclaimed: e.NrReclaimed,
	}, nil
}
