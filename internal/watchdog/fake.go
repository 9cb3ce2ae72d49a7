package watchdog

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// RecordingNotifier is a Notifier for tests: it keeps every state sent, in order, and
// can be told to fail. It is safe for concurrent use.
type RecordingNotifier struct {
	mu     sync.Mutex
	states []string
	err    error
	// changed is closed and replaced whenever a state is recorded, so waiters wake
	// without polling.
	changed chan struct{}
}

// NewRecordingNotifier returns an empty RecordingNotifier.
func NewRecordingNotifier() *RecordingNotifier {
	return &RecordingNotifier{changed: make(chan struct{})}
}

// Notify records state, or returns the error set by FailWith without recording.
func (r *RecordingNotifier) Notify(state string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.states = append(r.states, state)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// FailWith makes later Notify calls return err; nil makes them succeed again.
func (r *RecordingNotifier) FailWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// States returns a copy of the states recorded so far.
func (r *RecordingNotifier) States() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// WaitForCount blocks until at least n states have been recorded and returns them, or
// returns ctx's error together with what was recorded so far.
func (r *RecordingNotifier) WaitForCount(ctx context.Context, n int) ([]string, error) {
	for {
		r.mu.Lock()
		got, changed := slices.Clone(r.states), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, fmt.Errorf("waiting for %d notifications, have %d %q: %w", n, len(got), got, ctx.Err())
		}
	}
}
