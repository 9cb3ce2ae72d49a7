package blocklat

import (
	"fmt"
	"log/slog"
	"time"

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

// Recorder has the block request programs attached.
type Recorder struct {
	set   *attach.Set
	hists *ebpf.Map
	lost  *ebpf.Map
}

var _ Source = (*Recorder)(nil)

// Load loads and attaches the block request programs. Close releases them.
func Load(opts Options) (*Recorder, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	spec, err := loadBlocklat()
	if err != nil {
		return nil, fmt.Errorf("blocklat: %w", err)
	}
	set, err := attach.Load(spec, opts.Mode, log.With("bpf", "blocklat"))
	if err != nil {
		return nil, fmt.Errorf("blocklat: %w", err)
	}
	r := &Recorder{set: set}
	r.hists, err = set.Map(blocklatMapBlkHists)
	if err == nil {
		r.lost, err = set.Map(blocklatMapBlkLost)
	}
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("blocklat: %w", err)
	}
	return r, nil
}

// Mode is the program variant that was loaded (tp_btf or tracepoint).
func (r *Recorder) Mode() attach.Mode { return r.set.Mode }

// Stats returns each program's run count and run time, which the kernel accounts only
// while attach.EnableStats is in effect.
func (r *Recorder) Stats() (map[string]attach.RunStats, error) { return r.set.Stats() }

// BlockHistograms returns the latency histogram of every disk that completed a request
// since Load. Requests without a disk (rare: passthrough commands) are under 0:0.
func (r *Recorder) BlockHistograms() (map[Device]Histogram, error) {
	out := make(map[Device]Histogram)
	var (
		dev uint32
		v   blocklatBlkHist
	)
	it := r.hists.Iterate()
	for it.Next(&dev, &v) {
		out[deviceFromKernel(dev)] = Histogram{Counts: v.Slots, Count: v.Count, Sum: time.Duration(v.SumNs)}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("blocklat: read histograms: %w", err)
	}
	return out, nil
}

// Lost counts completions left out because the histogram map (1024 disks) was full.
func (r *Recorder) Lost() (uint64, error) {
	var n uint64
	if err := r.lost.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("blocklat: read loss counter: %w", err)
	}
	return n, nil
}

// Close detaches the programs.
func (r *Recorder) Close() error { return r.set.Close() }
