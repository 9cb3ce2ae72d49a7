//go:build !linux

package blocklat

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

// Recorder exists only on Linux.
type Recorder struct{}

var errNotLinux = errors.New("blocklat: eBPF needs Linux")

// Load fails: eBPF exists only on Linux.
func Load(opts Options) (*Recorder, error) { return nil, errNotLinux }

// Mode returns Auto.
func (r *Recorder) Mode() attach.Mode { return attach.Auto }

// Stats fails.
func (r *Recorder) Stats() (map[string]attach.RunStats, error) { return nil, errNotLinux }

// BlockHistograms fails.
func (r *Recorder) BlockHistograms() (map[Device]Histogram, error) { return nil, errNotLinux }

// Lost fails.
func (r *Recorder) Lost() (uint64, error) { return 0, errNotLinux }

// Close does nothing.
func (r *Recorder) Close() error { return nil }
