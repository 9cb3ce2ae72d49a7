package ringevents

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// Reader reads one ring buffer. Events starts the single consumer; Close stops it.
type Reader[T any] struct {
	rd      *ringbuf.Reader
	decode  func([]byte) (T, error)
	log     *slog.Logger
	mu      sync.Mutex
	started bool
	wg      sync.WaitGroup
	// closed ends a send that nobody receives, so Close never waits on a consumer.
	closed    chan struct{}
	closeOnce sync.Once
}

// New opens a reader on the ring buffer m; decode turns one record into a T.
func New[T any](m *ebpf.Map, decode func([]byte) (T, error), log *slog.Logger) (*Reader[T], error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	return &Reader[T]{rd: rd, decode: decode, log: log, closed: make(chan struct{})}, nil
}

// Events returns a channel of decoded records, closed when ctx ends or Close is
// called. A ring buffer has one consumer: only the first call gets records, later
// calls get a closed channel (and a logged error).
//
// Events are sent without dropping: while nobody receives, the ring buffer fills and
// the BPF program counts what it cannot store.
func (r *Reader[T]) Events(ctx context.Context) <-chan T {
	out := make(chan T)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		r.log.Error("BPF ring buffer already has a consumer; this one gets nothing")
		close(out)
		return out
	}
	r.started = true
	stop := context.AfterFunc(ctx, func() { r.rd.Close() })
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(out)
		defer stop()
		r.pump(ctx, out)
	}()
	return out
}

func (r *Reader[T]) pump(ctx context.Context, out chan<- T) {
	var rec ringbuf.Record
	for {
		if err := r.rd.ReadInto(&rec); err != nil {
			if !errors.Is(err, os.ErrClosed) {
				r.log.Error("read BPF ring buffer", "error", err)
			}
			return
		}
		v, err := r.decode(rec.RawSample)
		if err != nil {
			r.log.Error("decode BPF event", "error", err, "bytes", len(rec.RawSample))
			continue
		}
		select {
		case out <- v:
		case <-ctx.Done():
			return
		case <-r.closed:
			return
		}
	}
}

// Close stops the consumer, if any, and waits for it. Safe to call twice.
func (r *Reader[T]) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	err := r.rd.Close()
	r.wg.Wait()
	return err
}
