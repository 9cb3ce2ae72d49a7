//go:build !linux

package tasks

import (
	"errors"
	"log/slog"

	"github.com/plinth/plinth/bpf/attach"
)

// Options configure Load.
type Options struct {
	Mode   attach.Mode
	Logger *slog.Logger
}

// Counter exists only on Linux.
type Counter struct{}

var errNotLinux = errors.New("tasks: eBPF needs Linux")

// Load fails: eBPF exists only on Linux.
func Load(opts Options) (*Counter, error) { return nil, errNotLinux }

// Mode returns Auto.
func (c *Counter) Mode() attach.Mode { return attach.Auto }

// Stats fails.
func (c *Counter) Stats() (map[string]attach.RunStats, error) { return nil, errNotLinux }

// ForkCount fails.
func (c *Counter) ForkCount() (uint64, error) { return 0, errNotLinux }

// Totals fails.
func (c *Counter) Totals() (TaskCount, error) { return TaskCount{}, errNotLinux }

// TaskCounts fails.
func (c *Counter) TaskCounts() (map[uint64]TaskCount, error) { return nil, errNotLinux }

// Forget fails.
func (c *Counter) Forget(cgroupID uint64) error { return errNotLinux }

// Lost fails.
func (c *Counter) Lost() (uint64, error) { return 0, errNotLinux }

// Close does nothing.
func (c *Counter) Close() error { return nil }
