package blocklat

import (
	"fmt"
	"maps"
	"sync"
	"time"
)

// Buckets is the number of histogram buckets.
const Buckets = 32

// Device is a disk by major and minor number.
type Device struct {
	Major, Minor uint32
}

// String returns "MAJOR:MINOR", as /sys/dev/block and lsblk name disks.
func (d Device) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// deviceFromKernel splits a dev_t in the kernel's internal encoding (major << 20 |
// minor), the one the block tracepoints use.
func deviceFromKernel(dev uint32) Device {
	return Device{Major: dev >> 20, Minor: dev & (1<<20 - 1)}
}

// Histogram is one disk's request latencies since Load.
type Histogram struct {
	// Counts[i] counts requests that took less than BucketBound(i) and at least
	// BucketBound(i-1) (bucket 0: from 0; the last bucket: everything longer).
	Counts [Buckets]uint64
	// Count is the number of requests, Sum their total latency.
	Count uint64
	Sum   time.Duration
}

// BucketBound is the exclusive upper bound of bucket i: 2^(i+1) µs.
func BucketBound(i int) time.Duration { return time.Microsecond << (i + 1) }

// Source is what consumers of block latency need; *Recorder and *Fake implement it.
type Source interface {
	BlockHistograms() (map[Device]Histogram, error)
}

// Fake is a Source for consumers' unit tests: it returns what was set.
type Fake struct {
	mu    sync.Mutex
	hists map[Device]Histogram
}

// NewFake returns a Fake without histograms.
func NewFake() *Fake { return &Fake{hists: map[Device]Histogram{}} }

// Set sets the histogram of d.
func (f *Fake) Set(d Device, h Histogram) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hists[d] = h
}

// BlockHistograms returns a copy of what Set set.
func (f *Fake) BlockHistograms() (map[Device]Histogram, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.hists), nil
}
