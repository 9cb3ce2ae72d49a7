package gc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// absentOwnersRemembered bounds the cache of owners confirmed absent. UIDs are never
// reused, so an entry never goes stale; the bound only limits memory.
const absentOwnersRemembered = 1000

// discoveryRetry is how soon a failed first discovery is tried again: the control
// service starts its controllers while its listener comes up.
const discoveryRetry = time.Second

// Controller is the garbage collector.
type Controller struct {
	client   metadata.Interface
	disc     discovery.DiscoveryInterface
	mapper   meta.RESTMapper
	clock    clock.WithTicker
	logger   *slog.Logger
	recorder EventRecorder
	opts     Options
	metrics  *metrics

	graph    *graph
	monitors *monitors
	queue    workqueue.TypedRateLimitingInterface[types.UID]
	// absent remembers owners confirmed absent by a live read (absentKey), so the
	// many dependents of one deleted owner cost one GET.
	absent *lru.Cache
}

// absentKey names an owner looked up in one namespace ("" for cluster-scoped owners).
type absentKey struct {
	uid       types.UID
	namespace string
}

// errGraphIncomplete defers Orphan and Foreground processing until every informer has
// listed its resource, so no dependent is missed.
var errGraphIncomplete = errors.New("gc: the informers have not all listed their resources yet")

// New builds a collector; Run starts it.
func New(cfg Config) (*Controller, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Options.Ignored == nil {
		cfg.Options.Ignored = DefaultIgnoredResources()
	}
	if cfg.Mapper == nil {
		cfg.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cfg.Discovery))
	}
	c := &Controller{
		client:   cfg.Client,
		disc:     cfg.Discovery,
		mapper:   cfg.Mapper,
		clock:    cfg.Clock,
		logger:   cfg.Logger.With("controller", "gc"),
		recorder: cfg.Recorder,
		opts:     cfg.Options,
		graph:    newGraph(),
		absent:   lru.New(absentOwnersRemembered),
	}
	m, err := newMetrics(cfg.Registerer, func() float64 { return float64(c.graph.size()) })
	if err != nil {
		return nil, err
	}
	c.metrics = m
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
		workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "garbage_collector", MetricsProvider: m.queue, Clock: cfg.Clock})
	c.monitors = newMonitors(cfg.Client, c.graph, c.enqueue, c.logger)
	return c, nil
}

func (c *Controller) enqueue(uids ...types.UID) {
	for _, u := range uids {
		c.queue.Add(u)
	}
}

// Run discovers resources, starts their informers, waits (bounded) for their first
// lists, then processes work items with Options.Workers workers and re-discovers every
// Options.DiscoveryPeriod. It returns nil once ctx is done and everything it started
// has stopped, and must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "workers", c.opts.Workers, "discovery_period", c.opts.DiscoveryPeriod)
	defer c.logger.Info("stopped")
	var workers sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		workers.Wait()
		c.monitors.stop()
	}()

	if !c.discoverFirst(ctx) {
		return nil
	}
	if !c.waitForCaches(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		c.logger.Warn("not every resource was listed in time; collecting meanwhile, deferring Orphan and Foreground work until they are",
			"timeout", c.opts.CacheSyncTimeout)
	}
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	ticker := c.clock.NewTicker(c.opts.DiscoveryPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			c.rediscover(ctx)
		}
	}
}

// discoverFirst retries discovery until it works; false means ctx ended first.
func (c *Controller) discoverFirst(ctx context.Context) bool {
	for {
		err := c.rediscover(ctx)
		if err == nil {
			return true
		}
		c.logger.Info("discovery failed; retrying", "err", err, "retry_in", discoveryRetry)
		t := c.clock.NewTimer(discoveryRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
}

// rediscover brings the informers in line with discovery. Resources are dropped only
// when discovery answered for every group.
func (c *Controller) rediscover(ctx context.Context) error {
	want, complete, err := collectableResources(c.disc, c.opts.Ignored)
	if err != nil {
		c.logger.Warn("discovery failed; keeping the watched resources", "err", err)
		return err
	}
	changed, err := c.monitors.sync(ctx, want, complete)
	if err != nil {
		c.logger.Warn("starting informers", "err", err)
	}
	if changed {
		if r, ok := c.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
	}
	c.metrics.resources.Set(float64(c.monitors.count()))
	return nil
}

// waitForCaches waits up to CacheSyncTimeout for every informer's first list.
func (c *Controller) waitForCaches(ctx context.Context) bool {
	stop := make(chan struct{})
	timer := c.clock.NewTimer(c.opts.CacheSyncTimeout)
	defer timer.Stop()
	waited := make(chan bool, 1)
	go func() { waited <- cache.WaitForCacheSync(stop, c.monitors.synced) }()
	select {
	case ok := <-waited:
		return ok
	case <-ctx.Done():
	case <-timer.C():
	}
	close(stop)
	<-waited
	return false
}

// processNext handles one work item; false means the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	uid, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(uid)
	err := c.reconcile(ctx, uid)
	switch {
	case err == nil:
		c.queue.Forget(uid)
	case ctx.Err() != nil:
	case errors.Is(err, errGraphIncomplete) || apierrors.IsConflict(err):
		c.logger.Debug("retrying", "uid", uid, "err", err)
		c.queue.AddRateLimited(uid)
	default:
		// A lasting failure (an owner of a kind the API does not serve) is retried
		// with growing delays; its log lines thin out the same way.
		retries := c.queue.NumRequeues(uid)
		level := slog.LevelDebug
		if retries&(retries-1) == 0 {
			level = slog.LevelWarn
		}
		c.logger.Log(ctx, level, "retrying", "uid", uid, "err", err, "retries", retries)
		c.queue.AddRateLimited(uid)
	}
	return true
}

// warn logs a problem with obj and records it as a warning event.
func (c *Controller) warn(obj runtime.Object, reason, message string) {
	c.logger.Warn(message, "reason", reason)
	if c.recorder != nil {
		c.recorder.Event(obj, "Warning", reason, message)
	}
}
