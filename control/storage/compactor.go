package storage

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"k8s.io/utils/clock"
)

// RunCompactor compacts etcd every interval to the revision it saw one interval earlier,
// so watchers and paginated lists always have at least one interval of history, as
// kube-apiserver does. It returns when ctx is done. Several control replicas may run it
// at once: compacting to a revision already compacted is harmless.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration, clk clock.WithTicker, logger *slog.Logger) {
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	var previous int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		current, err := s.CurrentRevision(ctx)
		if err != nil {
			logger.Warn("compaction: cannot read revision", "err", err)
			continue
		}
		if previous > 0 {
			err := s.Compact(ctx, previous)
			switch {
			case err == nil:
				logger.Debug("compacted etcd", "revision", previous)
			case errors.Is(err, rpctypes.ErrCompacted):
			default:
				logger.Warn("compaction failed", "revision", previous, "err", err)
			}
		}
		previous = current
	}
}
