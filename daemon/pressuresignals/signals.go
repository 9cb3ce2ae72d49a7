package pressuresignals

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/bpf/oomwatch"
	"github.com/plinth/plinth/bpf/reclaim"
	"github.com/plinth/plinth/bpf/tasks"
	"github.com/plinth/plinth/daemon/pressure"
)

// Defaults for Options.
const (
	// DefaultForkPollInterval is how often the fork counter is read for bursts.
	DefaultForkPollInterval = 250 * time.Millisecond
	// DefaultForkBurst is how many forks within one poll interval count as a burst
	// (400 a second at the default interval: a fork bomb, or a build starting).
	DefaultForkBurst = 100
	// wakeupBuffer is the capacity of the wakeups channel; the manager merges what is
	// queued into one evaluation, so a few are enough to never lose the last hint.
	wakeupBuffer = 8
)

// Options configure the signals.
type Options struct {
	// NodeName is the Node OOM kill Events are about.
	NodeName string
	// NodefsDir and ImagefsDir are directories on the nodefs and imagefs filesystems
	// (config NodefsDir and ImagefsDir); they may be the same.
	NodefsDir, ImagefsDir string
	// PodsCgroup is the cgroup holding every pod; empty leaves
	// allocatableMemory.available unobserved.
	PodsCgroup string
	// AllocatableMemoryBytes is the node's allocatable memory, the capacity of
	// allocatableMemory.available when the pods cgroup has no memory limit; 0 means
	// MemTotal.
	AllocatableMemoryBytes uint64
	// Thresholds and EvaluationInterval are the pressure manager's, for the approach
	// wakeups; with no thresholds there are none.
	Thresholds         []pressure.Threshold
	EvaluationInterval time.Duration
	// ForkPollInterval and ForkBurst tune fork-burst wakeups; zero means the defaults.
	ForkPollInterval time.Duration
	ForkBurst        uint64
	// Events receives a Kubernetes Event for each OOM kill; nil posts none.
	Events EventSink
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger is required.
	Logger *slog.Logger
	// Clock is the time source; nil means the real clock.
	Clock clock.WithTickerAndDelayedExecution
}

// Deps are the sources the signals are built from. Open fills them in from the
// running system; tests pass fakes.
type Deps struct {
	Host Host
	// Triggers are armed PSI triggers.
	Triggers []Trigger
	// OOM, Reclaim and Tasks are the BPF sources that loaded; nil for those that did
	// not.
	OOM     oomwatch.Source
	Reclaim reclaim.Source
	Tasks   tasks.Source
	// Unavailable says, by feed name, why an event source could not be set up.
	Unavailable map[string]error
	// Closers are released by Close, after the goroutines have stopped.
	Closers []io.Closer
}

// Trigger is an armed PSI trigger and the feed it serves.
type Trigger struct {
	Feed string
	Path string
	// Events is a *psi.Trigger or *psi.FakeTrigger.
	Events interface {
		Events(ctx context.Context) <-chan time.Time
		Err() error
	}
}

// Signals is the pressure manager's SignalSource and Wakeups.
type Signals struct {
	opts    Options
	deps    Deps
	poller  *poller
	clock   clock.WithTickerAndDelayedExecution
	logger  *slog.Logger
	metrics *metrics
	wakeups chan pressure.Trigger
	oomq    chan oomwatch.OOMKill // kills waiting for their Event
	near    *approach

	mu      sync.Mutex
	events  map[string]feedState // event-driven feeds
	started bool

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

type feedState struct {
	active bool
	detail string
}

var _ pressure.SignalSource = (*Signals)(nil)

// New builds the signals from deps and registers the metrics. Start sets the event
// sources going.
func New(opts Options, deps Deps) (*Signals, error) {
	if opts.Logger == nil {
		return nil, errors.New("pressuresignals: New needs a Logger")
	}
	if deps.Host.Statfs == nil {
		return nil, errors.New("pressuresignals: New needs Host.Statfs")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ForkPollInterval <= 0 {
		opts.ForkPollInterval = DefaultForkPollInterval
	}
	if opts.ForkBurst == 0 {
		opts.ForkBurst = DefaultForkBurst
	}
	if opts.EvaluationInterval <= 0 {
		opts.EvaluationInterval = pressure.DefaultEvaluationInterval
	}
	met, err := newMetrics(opts.Registerer, deps.Host.ProcDir, deps.Reclaim)
	if err != nil {
		return nil, fmt.Errorf("pressuresignals metrics: %w", err)
	}
	s := &Signals{
		opts: opts,
		deps: deps,
		poller: &poller{host: deps.Host, nodefsDir: opts.NodefsDir, imagefsDir: opts.ImagefsDir,
			podsCgroup: opts.PodsCgroup, allocatable: opts.AllocatableMemoryBytes},
		clock:   opts.Clock,
		logger:  opts.Logger,
		metrics: met,
		wakeups: make(chan pressure.Trigger, wakeupBuffer),
		oomq:    make(chan oomwatch.OOMKill, oomQueue),
		events:  map[string]feedState{},
	}
	s.near = newApproach(slices.Clone(opts.Thresholds), opts.EvaluationInterval, opts.Clock,
		func() { s.wake(TriggerApproach) })

	for _, t := range deps.Triggers {
		s.events[t.Feed] = feedState{active: true}
	}
	if deps.OOM != nil {
		s.events[FeedOOM] = feedState{active: true}
	}
	if deps.Reclaim != nil {
		s.events[FeedReclaim] = feedState{active: true}
	}
	if deps.Tasks != nil {
		s.events[FeedTasks] = feedState{active: true}
	}
	for name, err := range deps.Unavailable {
		if err == nil {
			err = errors.New("unavailable")
		}
		s.events[name] = feedState{detail: err.Error()}
	}
	return s, nil
}

// Start sets the event sources going in goroutines that stop when ctx is done or
// Close is called. It may be called once.
func (s *Signals) Start(ctx context.Context) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		panic("pressuresignals: Start called twice")
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	s.mu.Unlock()

	for _, t := range s.deps.Triggers {
		s.wg.Go(func() { s.runTrigger(ctx, t) })
	}
	if s.deps.OOM != nil {
		s.wg.Go(func() { s.runOOM(ctx) })
		s.wg.Go(func() { s.postOOMEvents(ctx) })
	}
	if s.deps.Reclaim != nil {
		s.wg.Go(func() { s.runReclaim(ctx) })
	}
	if s.deps.Tasks != nil {
		s.wg.Go(func() { s.runForks(ctx) })
	}
	s.wg.Go(func() {
		<-ctx.Done()
		s.near.stop()
	})
}

// Close stops the goroutines, waits for them and releases the PSI triggers and BPF
// objects. It is safe to call more than once and without Start.
func (s *Signals) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		cancel := s.cancel
		s.started = true // a Start after Close would use released sources
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		s.wg.Wait()
		s.near.stop()
		var errs []error
		for _, c := range s.deps.Closers {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Wakeups is the channel of hints for the pressure manager.
func (s *Signals) Wakeups() pressure.Wakeups { return s.wakeups }

// wake sends a hint without blocking: one that finds the buffer full is merged into
// those waiting, which is all the manager would make of it anyway.
func (s *Signals) wake(t pressure.Trigger) {
	s.metrics.wakeups.WithLabelValues(string(t)).Inc()
	select {
	case s.wakeups <- t:
	default:
	}
}

// Observe reads the polled signals and reports every feed; it implements
// pressure.SignalSource.
func (s *Signals) Observe(ctx context.Context) (pressure.Observations, error) {
	obs, polled, err := s.poller.observe(ctx)
	obs.Feeds = s.feeds(polled)
	if err == nil {
		s.near.observe(s.clock.Now(), obs.Samples())
	}
	return obs, err
}

// Feeds reports the event-driven feeds as they are now (the polled ones are known
// only from an observation).
func (s *Signals) Feeds() []pressure.Feed { return s.feeds(nil) }

func (s *Signals) feeds(polled polledFeeds) []pressure.Feed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]pressure.Feed, 0, len(feedOrder))
	for _, name := range feedOrder {
		f := pressure.Feed{Name: name, Conditions: feedConditions[name]}
		if err, ok := polled[name]; ok {
			f.Active = err == nil
			if err != nil {
				f.Detail = err.Error()
			}
		} else if st, ok := s.events[name]; ok {
			f.Active, f.Detail = st.active, st.detail
		} else {
			continue
		}
		out = append(out, f)
	}
	return out
}

// fail marks an event feed inactive once its source stopped while plinthd runs.
func (s *Signals) fail(ctx context.Context, feed string, err error) {
	if ctx.Err() != nil {
		return // stopping: not a failure
	}
	if err == nil {
		err = errors.New("stopped delivering events")
	}
	s.logger.Warn("pressure feed stopped; evaluation goes on without it", "feed", feed, "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[feed] = feedState{detail: err.Error()}
}

func (s *Signals) runTrigger(ctx context.Context, t Trigger) {
	for range t.Events.Events(ctx) {
		s.wake(pressure.TriggerPSI)
	}
	s.fail(ctx, t.Feed, fmt.Errorf("PSI trigger on %s: %w", t.Path, t.Events.Err()))
}

func (s *Signals) runReclaim(ctx context.Context) {
	bursts := s.deps.Reclaim.StallBursts(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case b, ok := <-bursts:
			if !ok {
				s.fail(ctx, FeedReclaim, errors.New("reclaim stall bursts stopped"))
				return
			}
			s.logger.Debug("reclaim stall burst", "kind", b.Kind, "duration", b.Duration, "pid", b.PID, "comm", b.Comm, "cgroup_id", b.CgroupID)
			s.wake(pressure.TriggerReclaimStall)
		}
	}
}

// runForks reads the fork counter every poll interval and wakes the manager when
// more forks than the burst size happened since the last read. Counting happens in
// the kernel, so a burst between reads is never missed, only seen up to one interval
// late.
func (s *Signals) runForks(ctx context.Context) {
	last, err := s.deps.Tasks.ForkCount()
	if err != nil {
		s.fail(ctx, FeedTasks, fmt.Errorf("reading the fork counter: %w", err))
		return
	}
	ticker := s.clock.NewTicker(s.opts.ForkPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		n, err := s.deps.Tasks.ForkCount()
		if err != nil {
			s.fail(ctx, FeedTasks, fmt.Errorf("reading the fork counter: %w", err))
			return
		}
		if n-last >= s.opts.ForkBurst {
			s.wake(pressure.TriggerForkBurst)
		}
		last = n
	}
}
