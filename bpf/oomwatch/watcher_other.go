//go:build !linux

package oomwatch

import (
	"context"
	"errors"
	"log/slog"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/bpf/attach"
)

// Options configure Load.
type Options struct {
	Mode   attach.Mode
	Logger *slog.Logger
	Clock  clock.PassiveClock
}

// Watcher exists only on Linux.
type Watcher struct{}

var errNotLinux = errors.New("oomwatch: eBPF needs Linux")

// Load fails: eBPF exists only on Linux.
func Load(opts Options) (*Watcher, error) { return nil, errNotLinux }

// Mode returns Auto.
func (w *Watcher) Mode() attach.Mode { return attach.Auto }

// Stats fails.
func (w *Watcher) Stats() (map[string]attach.RunStats, error) { return nil, errNotLinux }

// OOMEvents returns a closed channel.
func (w *Watcher) OOMEvents(ctx context.Context) <-chan OOMKill {
	ch := make(chan OOMKill)
	close(ch)
	return ch
}

// Lost fails.
func (w *Watcher) Lost() (uint64, error) { return 0, errNotLinux }

// Close does nothing.
func (w *Watcher) Close() error { return nil }
