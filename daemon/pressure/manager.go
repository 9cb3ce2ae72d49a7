package pressure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Defaults for Config.
const (
	DefaultPressureTransitionPeriod = 5 * time.Minute
	DefaultEvaluationInterval       = time.Second
)

// observeTimeout bounds one Observe call, so a source stuck on a hung filesystem
// cannot stop evaluation for good; the source must honour its context.
const observeTimeout = 5 * time.Second

// Config is how the manager decides.
type Config struct {
	// Thresholds come from ParseThresholds.
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a condition stays True after the last
	// evaluation that found one of its thresholds crossed.
	PressureTransitionPeriod time.Duration
	// EvaluationInterval is the longest time between two evaluations when no wakeup
	// comes.
	EvaluationInterval time.Duration
	// PodGoneTimeout is how long eviction waits for an evicted pod to go before
	// choosing the next.
	PodGoneTimeout time.Duration
	// MaxPodGracePeriod caps the grace period of a pod evicted for a soft threshold
	// (kubelet's evictionMaxPodGracePeriod); 0 leaves the pod's own.
	MaxPodGracePeriod time.Duration
}

// DefaultConfig returns the default thresholds and periods.
func DefaultConfig() Config {
	thresholds, err := ParseThresholds(ThresholdSpec{Hard: DefaultEvictionHard()})
	if err != nil {
		panic("pressure: default thresholds do not parse: " + err.Error())
	}
	return Config{
		Thresholds:               thresholds,
		PressureTransitionPeriod: DefaultPressureTransitionPeriod,
		EvaluationInterval:       DefaultEvaluationInterval,
		PodGoneTimeout:           DefaultPodGoneTimeout,
	}
}

func (c Config) validate() error {
	var errs []error
	if c.PressureTransitionPeriod < 0 {
		errs = append(errs, fmt.Errorf("pressure config: PressureTransitionPeriod %s: want 0 or more", c.PressureTransitionPeriod))
	}
	if c.EvaluationInterval <= 0 {
		errs = append(errs, fmt.Errorf("pressure config: EvaluationInterval %s: want a positive duration", c.EvaluationInterval))
	}
	if c.MaxPodGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("pressure config: MaxPodGracePeriod %s: want 0 (no cap) or more", c.MaxPodGracePeriod))
	}
	if c.PodGoneTimeout <= 0 {
		errs = append(errs, fmt.Errorf("pressure config: PodGoneTimeout %s: want a positive duration", c.PodGoneTimeout))
	}
	for i, t := range c.Thresholds {
		if !t.Signal.Known() {
			errs = append(errs, fmt.Errorf("pressure config: Thresholds[%d]: unknown signal %q", i, t.Signal))
		}
	}
	return errors.Join(errs...)
}

// Deps are what the manager works with.
type Deps struct {
	// Source observes the node; required.
	Source SignalSource
	// Wakeups makes the manager evaluate at once; nil leaves only the periodic floor.
	Wakeups Wakeups
	// Pods and Evictor enable eviction; with either nil the manager only reports
	// conditions and metrics.
	Pods    PodLister
	Evictor Evictor
	// Reclaimer frees disk at node level before evicting for disk; may be nil.
	Reclaimer NodeReclaimer
	// ConditionsChanged, when set, is called from Run with the conditions whenever
	// the status of one changed (DiskPressure rising starts garbage collection at
	// once, before any threshold is actionable). It must not block.
	ConditionsChanged func([]corev1.NodeCondition)
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// Registerer takes the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger is required.
	Logger *slog.Logger
}

// Manager evaluates pressure on every wakeup and at least every evaluation interval,
// reports the pressure conditions (it is a daemon/node ConditionSource), tells the
// node agent when they change, and drives eviction.
type Manager struct {
	cfg     Config
	source  SignalSource
	wakeups Wakeups
	clock   clock.Clock
	logger  *slog.Logger
	metrics *metrics
	eval    *evaluator // owned by Run
	worker  *evictionWorker

	running    atomic.Bool
	startedSeq atomic.Uint64 // number of the newest evaluation that began observing
	changed    chan struct{}
	internal   chan Trigger // the eviction worker's requests for a fresh evaluation
	onChange   func([]corev1.NodeCondition)

	mu         sync.Mutex
	latest     evaluation
	conditions []corev1.NodeCondition
	lastErr    string // last Observe error, logged once per change
}

// NewManager checks cfg and registers the metrics.
func NewManager(cfg Config, deps Deps) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if deps.Source == nil {
		return nil, errors.New("pressure: NewManager needs a SignalSource")
	}
	if deps.Logger == nil {
		return nil, errors.New("pressure: NewManager needs a Logger")
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	met, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, fmt.Errorf("pressure metrics: %w", err)
	}
	for _, t := range cfg.Thresholds {
		met.crossings.WithLabelValues(string(t.Signal)) // present from the start, so rate() works
	}
	m := &Manager{
		cfg:        cfg,
		source:     deps.Source,
		wakeups:    deps.Wakeups,
		clock:      clk,
		logger:     deps.Logger,
		metrics:    met,
		eval:       newEvaluator(slices.Clone(cfg.Thresholds), cfg.PressureTransitionPeriod),
		changed:    make(chan struct{}, 1),
		internal:   make(chan Trigger, 1),
		conditions: initialConditions(),
		onChange:   deps.ConditionsChanged,
	}
	if deps.Pods != nil && deps.Evictor != nil {
		m.worker = &evictionWorker{
			pods:        deps.Pods,
			evictor:     deps.Evictor,
			reclaimer:   deps.Reclaimer,
			clock:       clk,
			logger:      deps.Logger.With("component", "eviction"),
			metrics:     met,
			goneTimeout: cfg.PodGoneTimeout,
			maxPodGrace: cfg.MaxPodGracePeriod,
			latest:      m.latestEvaluation,
			startedSeq:  m.startedSeq.Load,
			poke:        func() { m.requestEvaluation(TriggerEvictionStep) },
			notify:      make(chan struct{}, 1),
		}
	}
	return m, nil
}

// Run evaluates until ctx is done: once at start, then on every wakeup and whenever
// the evaluation interval passes without one. Eviction runs beside it in a goroutine
// Run owns. It returns nil when ctx is done, after that goroutine has stopped; it may
// be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("pressure: Manager.Run called twice")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // runs before wg.Wait: stops the worker
	if m.worker != nil {
		wg.Go(func() { m.worker.run(ctx) })
	}

	m.evaluate(ctx, TriggerStart)
	timer := m.clock.NewTimer(m.cfg.EvaluationInterval)
	defer timer.Stop()
	wakeups := m.wakeups
	for {
		var trigger Trigger
		select {
		case <-ctx.Done():
			return nil
		case t, ok := <-wakeups:
			if !ok {
				wakeups = nil // closed: the periodic floor remains
				continue
			}
			trigger = t
			drainWakeups(wakeups)
		case t := <-m.internal:
			trigger = t
		case <-timer.C():
			trigger = TriggerPeriodic
		}
		m.evaluate(ctx, trigger)
		if !timer.Stop() {
			select { // a tick that fired during the evaluation is stale
			case <-timer.C():
			default:
			}
		}
		timer.Reset(m.cfg.EvaluationInterval)
	}
}

// drainWakeups merges the wakeups already queued into the evaluation about to run:
// a burst of events needs one fresh look, not one per event.
func drainWakeups(w Wakeups) {
	for {
		select {
		case _, ok := <-w:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// requestEvaluation asks Run for an evaluation without waiting for it.
func (m *Manager) requestEvaluation(t Trigger) {
	select {
	case m.internal <- t:
	default: // one is already pending
	}
}

// evaluate observes, decides, publishes the outcome and hands it to eviction.
func (m *Manager) evaluate(ctx context.Context, trigger Trigger) {
	seq := m.startedSeq.Add(1)
	octx, cancel := context.WithTimeout(ctx, observeTimeout)
	obs, err := m.source.Observe(octx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down
		}
		m.noteObserveError(err)
		obs = Observations{} // nothing known: no threshold is crossed this time
	} else {
		m.noteObserveError(nil)
	}
	ev := m.eval.evaluate(m.clock.Now(), obs)
	ev.seq, ev.trigger = seq, trigger
	m.metrics.record(ev)
	m.publish(ev)
	if m.worker != nil {
		select {
		case m.worker.notify <- struct{}{}:
		default:
		}
	}
}

func (m *Manager) noteObserveError(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil && m.lastErr != "":
		m.logger.Info("observing node pressure works again")
		m.lastErr = ""
	case err != nil && err.Error() != m.lastErr:
		m.logger.Warn("observing node pressure failed; thresholds count as not crossed until it works", "err", err)
		m.lastErr = err.Error()
	}
}

// publish makes ev the current state and pokes Changed when the conditions changed
// in status, reason, crossed thresholds or working feeds.
func (m *Manager) publish(ev evaluation) {
	m.mu.Lock()
	prevShape := m.latest.shape
	prev := m.conditions
	m.latest, m.conditions = ev, ev.conditions
	m.mu.Unlock()

	statusChanged := false
	for i, c := range ev.conditions {
		if i >= len(prev) || prev[i].Status != c.Status {
			statusChanged = true
			m.logger.Info("node condition changed", "type", c.Type, "status", c.Status, "reason", c.Reason,
				"message", c.Message, "trigger", ev.trigger)
		}
	}
	if statusChanged && m.onChange != nil {
		m.onChange(slices.Clone(ev.conditions))
	}
	if ev.shape != prevShape {
		select {
		case m.changed <- struct{}{}:
		default: // the node agent has not taken the last one yet; one is enough
		}
	}
}

func (m *Manager) latestEvaluation() evaluation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest
}

// Conditions returns MemoryPressure, DiskPressure and PIDPressure as of the last
// evaluation (all False before the first). It implements daemon/node's
// ConditionSource and is safe to call from any goroutine.
func (m *Manager) Conditions() []corev1.NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}

// Changed receives a value when a condition's status or reason changed, or the set of
// crossed thresholds or working feeds did, so the node agent can post status at once
// instead of at its next period. Values in messages change on every evaluation and do
// not count. At most one notification is pending; a reader that was away sees one.
func (m *Manager) Changed() <-chan struct{} { return m.changed }

// Snapshot is the state after the last evaluation, for plinthctl pressure and the
// node API.
type Snapshot struct {
	// Evaluated is false before the first evaluation; nothing else is set then
	// except Conditions.
	Evaluated  bool
	At         time.Time
	Trigger    Trigger
	Signals    map[Signal]Sample
	Thresholds []ThresholdState
	Feeds      []Feed
	Conditions []corev1.NodeCondition
}

// Snapshot returns the state after the last evaluation.
func (m *Manager) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := m.latest
	s := Snapshot{Conditions: slices.Clone(m.conditions)}
	if ev.seq == 0 {
		return s
	}
	s.Evaluated, s.At, s.Trigger = true, ev.at, ev.trigger
	s.Signals = make(map[Signal]Sample, len(ev.samples))
	for k, v := range ev.samples {
		s.Signals[k] = v
	}
	s.Thresholds = slices.Clone(ev.results)
	s.Feeds = slices.Clone(ev.feeds)
	return s
}
