package images

import (
	"context"
	"sync"
	"time"
)

// DefaultGCPeriod is how often kubelet collects images.
const DefaultGCPeriod = 5 * time.Minute

// ImageGC runs image garbage collection every period and whenever Trigger asks (for
// DiskPressure rising); Collect runs one synchronously (before an eviction).
type ImageGC struct {
	store   *Store
	policy  GCPolicy
	inUse   InUseFunc
	period  time.Duration
	trigger chan struct{}
	// collecting lets one collection run at a time (Run's, or a reclaim's).
	collecting sync.Mutex

	// done, when set (tests), receives each collection's outcome.
	done chan<- gcOutcome
}

type gcOutcome struct {
	result GCResult
	err    error
}

// NewImageGC returns an image GC loop over the store; period 0 means DefaultGCPeriod.
func NewImageGC(s *Store, p GCPolicy, inUse InUseFunc, period time.Duration) *ImageGC {
	if period <= 0 {
		period = DefaultGCPeriod
	}
	return &ImageGC{store: s, policy: p, inUse: inUse, period: period, trigger: make(chan struct{}, 1)}
}

// Trigger asks Run for a collection now; calls while one is pending are merged.
func (g *ImageGC) Trigger() {
	select {
	case g.trigger <- struct{}{}:
	default:
	}
}

// Collect runs one collection now.
func (g *ImageGC) Collect(ctx context.Context) (GCResult, error) {
	g.collecting.Lock()
	defer g.collecting.Unlock()
	return g.store.GarbageCollect(ctx, g.policy, g.inUse)
}

// CollectUnused deletes every unused image now, whatever the disk usage (images
// pulled within the policy's MinimumAge excepted), as kubelet's eviction manager does
// to reclaim disk before it evicts a pod. MaximumAge still applies as in Collect.
func (g *ImageGC) CollectUnused(ctx context.Context) (GCResult, error) {
	p := g.policy
	// At or above 0 % usage, free until usage is under 0 %: every candidate.
	p.HighThresholdPercent, p.LowThresholdPercent = 0, 0
	g.collecting.Lock()
	defer g.collecting.Unlock()
	return g.store.GarbageCollect(ctx, p, g.inUse)
}

// Run collects every period and on Trigger until ctx ends. Failures are logged and
// retried at the next period: a node keeps running when GC cannot.
func (g *ImageGC) Run(ctx context.Context) {
	clk := g.store.clock
	t := clk.NewTimer(g.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-g.trigger:
			if !t.Stop() {
				<-t.C()
			}
		}
		res, err := g.Collect(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			g.store.log.Warn("image garbage collection failed", "err", err)
		case len(res.Deleted) > 0:
			g.store.log.Info("image garbage collection", "deleted", len(res.Deleted), "freedBytes", res.FreedBytes,
				"usagePercent", res.Plan.UsagePercent, "bytesToFree", res.Plan.BytesToFree)
		}
		// Re-armed before the outcome is reported, so a test that steps the clock as
		// soon as it hears of this run cannot step past a timer not yet set.
		t.Reset(g.period)
		if g.done != nil {
			g.done <- gcOutcome{res, err}
		}
	}
}
