package containergc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// DefaultPeriod is how often kubelet collects containers.
const DefaultPeriod = time.Minute

// Runtime is what the collector needs from the pod runtime. Listing returns what exists
// now; removal of something already gone is not an error.
type Runtime interface {
	// DeadContainers lists every container that is not running.
	DeadContainers(ctx context.Context) ([]Container, error)
	// RemoveContainer deletes a dead container and what it leaves (its runc state,
	// bundle, root filesystem, log file), stopping it first if its state is unknown.
	RemoveContainer(ctx context.Context, c Container) error
	// Sandboxes lists pod sandboxes, with Active set for those ready or still holding
	// containers (listed after RemoveContainer calls of the same run, so removed
	// containers no longer hold theirs).
	Sandboxes(ctx context.Context) ([]Sandbox, error)
	RemoveSandbox(ctx context.Context, s Sandbox) error
	// PodLogDirs lists the pod log directories.
	PodLogDirs(ctx context.Context) ([]PodLogDir, error)
	RemovePodLogDir(ctx context.Context, d PodLogDir) error
}

// Result counts what one collection removed.
type Result struct {
	Containers, Sandboxes, LogDirs int
}

// Collector runs container GC every period and whenever Trigger asks.
type Collector struct {
	runtime Runtime
	pods    PodStates
	policy  Policy
	clock   clock.Clock
	period  time.Duration
	log     *slog.Logger
	metrics *metrics
	trigger chan struct{}
	// collecting lets one collection run at a time: Run's and a caller's of Collect
	// (node-pressure reclaim) would otherwise race to remove the same things.
	collecting sync.Mutex

	// done, when set (tests), receives each Run collection's outcome.
	done chan<- outcome
}

type outcome struct {
	result Result
	err    error
}

// Config is a Collector's setup; zero values take the defaults.
type Config struct {
	Policy Policy
	// Period between collections; DefaultPeriod when 0.
	Period time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
	// Registerer receives the metrics; none when nil.
	Registerer prometheus.Registerer
}

// NewCollector returns a collector over rt. It starts nothing: call Run.
func NewCollector(rt Runtime, pods PodStates, cfg Config) (*Collector, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	c := &Collector{runtime: rt, pods: pods, policy: cfg.Policy, clock: cfg.Clock, period: cfg.Period,
		log: cfg.Logger, trigger: make(chan struct{}, 1)}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.period <= 0 {
		c.period = DefaultPeriod
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Validate checks the policy.
func (p Policy) Validate() error {
	if p.MinAge < 0 {
		return fmt.Errorf("container GC: minimum age %s must not be negative", p.MinAge)
	}
	return nil
}

// Trigger asks Run for a collection now that also removes the containers of
// terminated pods (disk pressure); calls while one is pending are merged.
func (c *Collector) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run collects every period and on Trigger until ctx ends. A failed collection is
// logged and the next period tries again: the node keeps running when GC cannot.
func (c *Collector) Run(ctx context.Context) {
	t := c.clock.NewTimer(c.period)
	defer t.Stop()
	for {
		opts := Options{}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-c.trigger:
			opts.EvictTerminatedPods = true
			if !t.Stop() {
				<-t.C()
			}
		}
		res, err := c.Collect(ctx, opts)
		if err != nil {
			c.log.Warn("container garbage collection failed", "err", err)
		}
		if res != (Result{}) {
			c.log.Info("container garbage collection", "containers", res.Containers, "sandboxes", res.Sandboxes,
				"logDirectories", res.LogDirs, "triggered", opts.EvictTerminatedPods)
		}
		if c.done != nil {
			c.done <- outcome{res, err}
		}
		t.Reset(c.period)
	}
}

// Collect runs one collection now: containers, then sandboxes, then log directories.
// Every removal is tried even when another fails; the errors are returned joined. A
// collection under way (Run's) is waited for first.
func (c *Collector) Collect(ctx context.Context, opts Options) (Result, error) {
	c.collecting.Lock()
	defer c.collecting.Unlock()
	start := c.clock.Now()
	defer func() { c.metrics.duration.Observe(c.clock.Since(start).Seconds()) }()
	var res Result
	var errs []error
	fail := func(kind string, err error) {
		c.metrics.failures.WithLabelValues(kind).Inc()
		errs = append(errs, err)
	}

	dead, err := c.runtime.DeadContainers(ctx)
	if err != nil {
		fail("container", fmt.Errorf("listing dead containers: %w", err))
	}
	for _, r := range Plan(c.policy, dead, c.pods, c.clock.Now(), opts) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err := c.runtime.RemoveContainer(ctx, r.Container); err != nil {
			fail("container", fmt.Errorf("removing container %s (%s of pod %s): %w", r.Container.ID, r.Container.Name, r.Container.PodUID, err))
			continue
		}
		res.Containers++
		c.metrics.containers.WithLabelValues(r.Reason).Inc()
		c.log.Debug("removed dead container", "id", r.Container.ID, "pod", r.Container.PodUID, "container", r.Container.Name, "reason", r.Reason)
	}

	sandboxes, err := c.runtime.Sandboxes(ctx)
	if err != nil {
		fail("sandbox", fmt.Errorf("listing pod sandboxes: %w", err))
	}
	for _, s := range PlanSandboxes(sandboxes, c.pods, opts) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err := c.runtime.RemoveSandbox(ctx, s); err != nil {
			fail("sandbox", fmt.Errorf("removing sandbox %s of pod %s: %w", s.ID, s.PodUID, err))
			continue
		}
		res.Sandboxes++
		c.metrics.sandboxes.Inc()
	}

	dirs, err := c.runtime.PodLogDirs(ctx)
	if err != nil {
		fail("log_directory", fmt.Errorf("listing pod log directories: %w", err))
	}
	for _, d := range PlanLogDirs(dirs, c.pods) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err := c.runtime.RemovePodLogDir(ctx, d); err != nil {
			fail("log_directory", fmt.Errorf("removing log directory %s of pod %s: %w", d.Path, d.PodUID, err))
			continue
		}
		res.LogDirs++
		c.metrics.logDirs.Inc()
	}
	return res, errors.Join(errs...)
}
