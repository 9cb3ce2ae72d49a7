package apiserver

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/storage"
)

// latestRevisions knows the mod revision of every stored key as of a point in etcd's
// history that follows the present closely: a snapshot of all keys' revisions, then
// every change after it from one etcd watch, applied in order. While it is live, an
// object cache entry at a key's latest revision is that key's current value (as of the
// watch's progress), so a read that accepts any version (resourceVersion=0, what
// kubelet sends for its Node every 10 s) is answered from memory instead of a quorum
// read through etcd's raft loop. When the watch fails, it stops answering until it
// has a new snapshot; reads then go to etcd.
//
// Only the snapshot and the watch write it. Writes this server makes are not recorded
// when they return: the watch delivers them moments later, and recording them early
// would let a slow writer's revision land after a newer deletion.
type latestRevisions struct {
	mu   sync.RWMutex
	live bool
	revs map[string]int64
}

// reset replaces everything known with a snapshot and goes live.
func (l *latestRevisions) reset(revs map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revs, l.live = revs, true
}

// stop forgets everything: nothing is known until the next reset.
func (l *latestRevisions) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revs, l.live = nil, false
}

// apply records one change from the watch.
func (l *latestRevisions) apply(ev storage.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live {
		return
	}
	switch ev.Type {
	case storage.EventPut:
		l.revs[ev.KV.Key] = ev.Revision
	case storage.EventDelete:
		delete(l.revs, ev.KV.Key)
	}
}

// of returns key's latest revision, if it is known.
func (l *latestRevisions) of(key string) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if !l.live {
		return 0, false
	}
	rev, ok := l.revs[key]
	return rev, ok
}

// TrackLatest keeps the server's knowledge of each key's latest revision current until
// ctx ends, restarting from a new snapshot a second after its watch fails. Without it
// (or with the object cache off), reads with resourceVersion=0 are quorum reads, which
// is correct and slower. The caller owns the goroutine that runs it; clk times the
// retries.
func (s *Server) TrackLatest(ctx context.Context, clk clock.WithTicker) {
	if s.objects.limit <= 0 {
		return
	}
	defer s.latest.stop()
	for ctx.Err() == nil {
		err := s.trackOnce(ctx)
		s.latest.stop()
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("following stored revisions failed; reads at resourceVersion=0 go to etcd until it resumes", "err", err, "retryIn", time.Second)
		t := clk.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// trackOnce takes a snapshot and follows the watch after it until the watch ends.
func (s *Server) trackOnce(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	revs, at, err := s.cfg.Store.Revisions(wctx, "/")
	if err != nil {
		return err
	}
	events := s.cfg.Store.WatchChanges(wctx, "/", at)
	s.latest.reset(revs)
	for ev := range events {
		if ev.Type == storage.EventError {
			return ev.Err
		}
		s.latest.apply(ev)
	}
	return ctx.Err()
}

// current returns key's cached object when it is the key's latest known value; false
// means the caller must read etcd. The object is the cache's own (objectCache.view):
// read and encode it only.
func (s *Server) current(key string) (runtime.Object, bool) {
	rev, ok := s.latest.of(key)
	if !ok {
		return nil, false
	}
	return s.objects.view(key, rev)
}
