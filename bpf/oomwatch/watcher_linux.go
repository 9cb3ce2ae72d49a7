package oomwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/cilium/ebpf"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/internal/ringevents"
)

// Flags of struct oom_event (oom.c).
const (
	flagDetails      = 1
	flagVictimCgroup = 2
)

// Options configure Load. The zero value is usable.
type Options struct {
	// Mode picks the program variant; Auto prefers tp_btf.
	Mode attach.Mode
	// Logger gets load fallbacks and read errors; nil discards them.
	Logger *slog.Logger
	// Clock stamps OOMKill.Seen; nil means the real clock.
	Clock clock.PassiveClock
}

// Watcher has the OOM programs attached and reads their ring buffer.
type Watcher struct {
	set     *attach.Set
	events  *ringevents.Reader[OOMKill]
	dropped *ebpf.Map
}

var _ Source = (*Watcher)(nil)

// Load loads and attaches the OOM programs. Close releases them.
func Load(opts Options) (*Watcher, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	spec, err := loadOom()
	if err != nil {
		return nil, fmt.Errorf("oomwatch: %w", err)
	}
	set, err := attach.Load(spec, opts.Mode, log.With("bpf", "oomwatch"))
	if err != nil {
		return nil, fmt.Errorf("oomwatch: %w", err)
	}
	w := &Watcher{set: set}
	ring, err := set.Map(oomMapOomEvents)
	if err == nil {
		w.dropped, err = set.Map(oomMapOomDropped)
	}
	if err == nil {
		pageSize := uint64(os.Getpagesize())
		mode := set.Mode
		decode := func(b []byte) (OOMKill, error) {
			k, err := decodeEvent(b, pageSize)
			k.Mode, k.Seen = mode, clk.Now()
			return k, err
		}
		w.events, err = ringevents.New(ring, decode, log.With("bpf", "oomwatch"))
	}
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("oomwatch: %w", err)
	}
	return w, nil
}

// Mode is the program variant that was loaded (tp_btf or tracepoint).
func (w *Watcher) Mode() attach.Mode { return w.set.Mode }

// Stats returns each program's run count and run time, which the kernel accounts only
// while attach.EnableStats is in effect.
func (w *Watcher) Stats() (map[string]attach.RunStats, error) { return w.set.Stats() }

// OOMEvents delivers OOM kills until ctx ends or Close is called, then closes the
// channel. Call it once: the ring buffer has one consumer, later calls get a closed
// channel. Kills happening while nobody receives wait in a 64 KiB ring buffer (about
// 500 kills), and beyond that are counted by Lost.
func (w *Watcher) OOMEvents(ctx context.Context) <-chan OOMKill { return w.events.Events(ctx) }

// Lost counts kills lost because the ring buffer was full.
func (w *Watcher) Lost() (uint64, error) {
	var n uint64
	if err := w.dropped.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("oomwatch: read drop counter: %w", err)
	}
	return n, nil
}

// Close stops the event reader and detaches the programs.
func (w *Watcher) Close() error {
	return errors.Join(w.events.Close(), w.set.Close())
}

func decodeEvent(b []byte, pageSize uint64) (OOMKill, error) {
	var e oomOomEvent
	if err := binary.Read(bytes.NewReader(b), binary.NativeEndian, &e); err != nil {
		return OOMKill{}, fmt.Errorf("oom event of %d bytes: %w", len(b), err)
	}
	k := OOMKill{
		PID:             int(e.Pid),
		Comm:            ringevents.Comm(e.Comm),
		TriggerCgroupID: e.TriggerCgroupId,
	}
	if e.Flags&flagVictimCgroup != 0 {
		k.CgroupID, k.MemcgID = e.CgroupId, e.MemcgId
	}
	if e.Flags&flagDetails != 0 {
		k.Details = &OOMDetails{
			TGID:        int(e.Tgid),
			UID:         e.Uid,
			OOMScoreAdj: e.OomScoreAdj,
			TotalVM:     e.TotalVmPages * pageSize,
			AnonRSS:     e.AnonRssPages * pageSize,
			FileRSS:     e.FileRssPages * pageSize,
			ShmemRSS:    e.ShmemRssPages * pageSize,
			PageTables:  e.PgtablesBytes,
		}
	}
	return k, nil
}
