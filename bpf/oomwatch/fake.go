package oomwatch

import (
	"context"
	"sync"
)

// Fake is a Source for consumers' unit tests: Kill delivers an OOMKill to the channel
// OOMEvents returned.
type Fake struct {
	mu      sync.Mutex
	ch      chan OOMKill
	dropped uint64
}

// NewFake returns a Fake whose OOMEvents channel buffers up to 64 kills.
func NewFake() *Fake { return &Fake{ch: make(chan OOMKill, 64)} }

// OOMEvents returns the channel Kill sends on. Like the real Watcher it has one
// consumer; the channel is not closed when ctx ends.
func (f *Fake) OOMEvents(ctx context.Context) <-chan OOMKill { return f.ch }

// Kill queues k for the consumer; it blocks when 64 kills are already waiting.
func (f *Fake) Kill(k OOMKill) { f.ch <- k }

// SetLost sets what Lost returns.
func (f *Fake) SetLost(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = n
}

// Lost returns the value given to SetLost.
func (f *Fake) Lost() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped, nil
}
