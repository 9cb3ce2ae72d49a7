package storage

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType says what happened to a key.
type EventType int

const (
	// EventPut is a create or an update; Event.Created tells which.
	EventPut EventType = iota
	// EventDelete is a deletion; Event.Prev holds the object as it was.
	EventDelete
	// EventProgress carries only a revision: everything up to it has been delivered.
	EventProgress
	// EventError ends the stream; Event.Err says why (ErrCompacted when the start
	// revision is gone).
	EventError
)

// Event is one change seen by a watch.
type Event struct {
	Type     EventType
	Created  bool
	KV       KV  // the object after the change (Put), or the deleted key (Delete)
	Prev     *KV // the object before the change, when it existed
	Revision int64
	Err      error
}

// Watch streams changes under prefix made after revision after, until ctx is done or an
// error ends the stream with an EventError. The channel is closed when the watch ends;
// the caller owns ctx and so the goroutine behind the channel.
func (s *Store) Watch(ctx context.Context, prefix string, after int64) <-chan Event {
	return s.watch(ctx, prefix, after, true)
}

// WatchChanges is Watch without Event.Prev: etcd then does not read each changed key's
// previous value, which a consumer that only follows keys and revisions never uses.
func (s *Store) WatchChanges(ctx context.Context, prefix string, after int64) <-chan Event {
	return s.watch(ctx, prefix, after, false)
}

func (s *Store) watch(ctx context.Context, prefix string, after int64, withPrev bool) <-chan Event {
	out := make(chan Event, 64)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(after + 1), clientv3.WithProgressNotify()}
	if withPrev {
		opts = append(opts, clientv3.WithPrevKV())
	}
	ch := s.client.Watch(wctx, s.full(prefix), opts...)
	go func() {
		defer close(out)
		defer cancel()
		send := func(e Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for resp := range ch {
			if resp.CompactRevision != 0 {
				send(Event{Type: EventError, Err: fmt.Errorf("%w: watch from revision %d, compacted at %d", ErrCompacted, after+1, resp.CompactRevision)})
				return
			}
			if err := resp.Err(); err != nil {
				send(Event{Type: EventError, Err: fmt.Errorf("watch %s: %w", prefix, err)})
				return
			}
			if resp.IsProgressNotify() {
				if !send(Event{Type: EventProgress, Revision: resp.Header.Revision}) {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				e := Event{KV: s.kv(ev.Kv), Revision: ev.Kv.ModRevision}
				if ev.PrevKv != nil {
					prev := s.kv(ev.PrevKv)
					e.Prev = &prev
				}
				switch ev.Type {
				case mvccpb.PUT:
					e.Type = EventPut
					e.Created = ev.IsCreate()
				case mvccpb.DELETE:
					e.Type = EventDelete
				}
				if !send(e) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(Event{Type: EventError, Err: fmt.Errorf("watch %s: etcd closed the watch", prefix)})
		}
	}()
	return out
}

// Compact discards history before revision rev.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if _, err := s.client.Compact(ctx, rev); err != nil {
		return fmt.Errorf("compact to revision %d: %w", rev, err)
	}
	return nil
}
