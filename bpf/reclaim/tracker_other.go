//go:build !linux

package reclaim

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/bpf/attach"
)

// Options configure Load.
type Options struct {
	Mode           attach.Mode
	BurstThreshold time.Duration
	Logger         *slog.Logger
	Clock          clock.PassiveClock
}

// Tracker exists only on Linux.
type Tracker struct{}

var errNotLinux = errors.New("reclaim: eBPF needs Linux")

// Load fails: eBPF exists only on Linux.
func Load(opts Options) (*Tracker, error) { return nil, errNotLinux }

// Mode returns Auto.
func (t *Tracker) Mode() attach.Mode { return attach.Auto }

// Stats fails.
func (t *Tracker) Stats() (map[string]attach.RunStats, error) { return nil, errNotLinux }

// ReclaimTotals fails.
func (t *Tracker) ReclaimTotals() (map[uint64]ReclaimStat, error) { return nil, errNotLinux }

// Forget fails.
func (t *Tracker) Forget(cgroupID uint64) error { return errNotLinux }

// StallBursts returns a closed channel.
func (t *Tracker) StallBursts(ctx context.Context) <-chan StallBurst {
	ch := make(chan StallBurst)
	close(ch)
	return ch
}

// Lost fails.
func (t *Tracker) Lost() (Lost, error) { return Lost{}, errNotLinux }

// Close does nothing.
func (t *Tracker) Close() error { return nil }
