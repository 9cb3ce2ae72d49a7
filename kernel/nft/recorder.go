package nft

import (
	"context"
	"strings"
	"sync"
)

// Recorder is the fake Programmer: it applies batches to a Model with the kernel's
// all-or-nothing rules and keeps every applied batch's operations, so tests can compare
// the resulting tables (Text) and what each sync sent (Batches) as golden text.
type Recorder struct {
	mu      sync.Mutex
	model   *Model
	batches [][]string
	// FailNext, when set, makes the next Apply fail with it (and change nothing).
	FailNext error
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{model: NewModel()} }

func (r *Recorder) Apply(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.FailNext; err != nil {
		r.FailNext = nil
		return err
	}
	if err := r.model.Apply(b); err != nil {
		return err
	}
	r.batches = append(r.batches, b.Ops())
	return nil
}

func (r *Recorder) List(ctx context.Context, ref TableRef) (*Table, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.model.Tables[ref]
	if !ok {
		return nil, false, nil
	}
	return t.clone(), true, nil
}

func (r *Recorder) DeleteTables(ctx context.Context, refs ...TableRef) error {
	r.mu.Lock()
	var b Batch
	for _, ref := range refs {
		if _, ok := r.model.Tables[ref]; ok {
			b.DeleteTable(ref)
		}
	}
	r.mu.Unlock()
	if b.Empty() {
		return nil
	}
	return r.Apply(ctx, &b)
}

// Batches returns the operations of every successful Apply, oldest first.
func (r *Recorder) Batches() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.batches...)
}

// Tables returns a copy of the current model.
func (r *Recorder) Tables() *Model {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := NewModel()
	for ref, t := range r.model.Tables {
		m.Tables[ref] = t.clone()
	}
	return m
}

// Text renders the given tables (those that exist) one after another.
func (r *Recorder) Text(refs ...TableRef) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ref := range refs {
		if t, ok := r.model.Tables[ref]; ok {
			b.WriteString(t.String())
		}
	}
	return b.String()
}
