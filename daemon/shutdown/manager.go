package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Logind is what graceful shutdown needs from systemd-logind; DialLogind returns the
// real one, over D-Bus.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: the longest a delay lock may
	// hold a shutdown back.
	InhibitDelayMax(ctx context.Context) (time.Duration, error)
	// InhibitShutdown takes a delay inhibitor lock on "shutdown"; closing the result
	// releases it.
	InhibitShutdown(ctx context.Context, who, why string) (io.Closer, error)
	// ReloadConfig makes logind read logind.conf and its drop-ins again.
	ReloadConfig(ctx context.Context) error
	// PrepareForShutdown delivers logind's PrepareForShutdown signals in order: true
	// when a shutdown begins, false when it is cancelled. It is closed when the
	// connection to logind is lost or closed.
	PrepareForShutdown() <-chan bool
	// Close ends the connection.
	Close() error
}

// Pods is what graceful shutdown needs from the pod runtime.
type Pods interface {
	// Active returns the pods running on the node, static pods included.
	Active() []*corev1.Pod
	// Terminate stops pod giving its containers gracePeriod, marks it Failed with
	// ReasonTerminated and MessageTerminated, and returns once its containers are gone
	// or ctx is done (the runtime finishes the kill either way).
	Terminate(ctx context.Context, pod *corev1.Pod, gracePeriod time.Duration) error
}

// What graceful shutdown writes, kubelet's words.
const (
	// ReasonTerminated and MessageTerminated mark the pods graceful shutdown stopped.
	ReasonTerminated  = "Terminated"
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."
	// NotReadyMessage is the Ready condition's message while the node shuts down.
	NotReadyMessage = "node is shutting down"
)

// The inhibitor lock as `systemd-inhibit --list` shows it.
const (
	inhibitWho = "plinthd"
	inhibitWhy = "plinthd needs time to stop the node's pods gracefully"
)

// DefaultLogindConfDir is where the InhibitDelayMaxSec drop-in goes; DropInName is its
// name, late in lexical order so it wins over the distribution's drop-ins.
const (
	DefaultLogindConfDir = "/etc/systemd/logind.conf.d"
	DropInName           = "99-plinth-shutdown.conf"
)

// Reconnecting to logind after the connection was lost backs off from 1 s (kubelet
// retries every second) to 30 s.
const (
	redialInitial = time.Second
	redialMax     = 30 * time.Second
)

// After asking logind to reload, its new InhibitDelayMaxUSec is polled for: the reload
// is a signal, answered before logind has read the files.
const (
	reloadPolls        = 10
	reloadPollInterval = 200 * time.Millisecond
)

// ErrLogindUnavailable wraps the reason logind could not be reached when Run starts
// (no system bus, no logind): graceful shutdown is then off.
var ErrLogindUnavailable = errors.New("systemd-logind is unavailable")

// Config configures a Manager.
type Config struct {
	// Bands are the priority bands with their times; empty means off.
	Bands []Band
	// StateFile is where the last shutdown's start and end are recorded.
	StateFile string
	// LogindConfDir is where the drop-in raising InhibitDelayMaxSec is written
	// (DefaultLogindConfDir when empty).
	LogindConfDir string
	// Dial connects to logind.
	Dial func(ctx context.Context) (Logind, error)
	// Pods is the pod runtime; nil means there are no pods to stop.
	Pods       Pods
	Clock      clock.WithTicker
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Manager runs graceful node shutdown. ShuttingDown and Changed may be called from any
// goroutine; Run runs once.
type Manager struct {
	cfg     Config
	metrics *metrics
	logger  *slog.Logger

	shuttingDown atomic.Bool
	changed      chan struct{}
}

// New checks cfg and registers the metrics.
func New(cfg Config) (*Manager, error) {
	if len(cfg.Bands) == 0 {
		return nil, errors.New("graceful node shutdown: no priority bands configured")
	}
	if cfg.Dial == nil || cfg.Clock == nil || cfg.Logger == nil || cfg.StateFile == "" {
		return nil, errors.New("graceful node shutdown: Dial, Clock, Logger and StateFile are required")
	}
	if cfg.LogindConfDir == "" {
		cfg.LogindConfDir = DefaultLogindConfDir
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("graceful node shutdown metrics: %w", err)
	}
	return &Manager{cfg: cfg, metrics: m, logger: cfg.Logger, changed: make(chan struct{}, 1)}, nil
}

// ShuttingDown reports whether a shutdown is under way: the node is not Ready and
// admits no pod.
func (m *Manager) ShuttingDown() bool { return m.shuttingDown.Load() }

// Changed receives a value when ShuttingDown changes, so the node status goes out at
// once.
func (m *Manager) Changed() <-chan struct{} { return m.changed }

func (m *Manager) setShuttingDown(v bool) {
	if m.shuttingDown.Swap(v) != v {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
}

// Run connects to logind and handles shutdowns until ctx is done, reconnecting when the
// connection is lost. When logind cannot be reached at the start it returns an error
// wrapping ErrLogindUnavailable at once: the caller runs without graceful shutdown.
func (m *Manager) Run(ctx context.Context) error {
	if last, err := ReadState(m.cfg.StateFile); err != nil {
		m.logger.Warn("reading the last graceful shutdown's state", "err", err)
	} else {
		m.metrics.set(last)
	}
	lg, err := m.cfg.Dial(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLogindUnavailable, err)
	}
	wait := redialInitial
	for {
		err := m.session(ctx, lg)
		if cerr := lg.Close(); cerr != nil && ctx.Err() == nil {
			m.logger.Debug("closing the logind connection", "err", cerr)
		}
		if ctx.Err() != nil {
			return nil
		}
		m.logger.Warn("graceful node shutdown lost systemd-logind; reconnecting", "err", err, "retry_in", wait)
		for {
			if !m.sleep(ctx, wait) {
				return nil
			}
			wait = min(2*wait, redialMax)
			if lg, err = m.cfg.Dial(ctx); err == nil {
				wait = redialInitial
				break
			}
			m.logger.Warn("reconnecting to systemd-logind", "err", err, "retry_in", wait)
		}
	}
}

// session holds the inhibitor lock on one connection and handles its signals until ctx
// is done (nil) or the connection fails (the error).
func (m *Manager) session(ctx context.Context, lg Logind) error {
	if err := m.ensureInhibitDelay(ctx, lg); err != nil {
		m.logger.Warn("logind may not wait the whole graceful shutdown time", "err", err)
	}
	events := lg.PrepareForShutdown()
	lock, err := lg.InhibitShutdown(ctx, inhibitWho, inhibitWhy)
	if err != nil {
		return fmt.Errorf("taking the shutdown inhibitor lock: %w", err)
	}
	m.logger.Info("holding a shutdown delay inhibitor lock", "grace_period", TotalGracePeriod(m.cfg.Bands))
	release := func() {
		if lock == nil {
			return
		}
		if err := lock.Close(); err != nil {
			m.logger.Warn("releasing the shutdown inhibitor lock", "err", err)
		}
		lock = nil
	}
	defer release()

	// seq is the shutdown under way, if any.
	var seq *sequence
	stopSeq := func() {
		if seq != nil {
			seq.stop()
			seq = nil
		}
	}
	defer stopSeq()
	var seqDone <-chan struct{} // seq's done, nil while none runs
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-seqDone:
			seq, seqDone = nil, nil
			release()
			m.logger.Info("graceful node shutdown done; released the inhibitor lock, the node shuts down now")
		case active, ok := <-events:
			if !ok {
				return errors.New("the PrepareForShutdown signals ended (connection lost)")
			}
			switch {
			case active && (seq != nil || lock == nil):
				// A repeated signal for the shutdown already handled.
			case active:
				m.logger.Info("logind announced a shutdown; stopping the node's pods", "bands", len(m.cfg.Bands))
				seq = m.startShutdown(ctx)
				seqDone = seq.done
			default:
				m.logger.Info("logind cancelled the shutdown; the node accepts pods again")
				stopSeq()
				seqDone = nil
				m.setShuttingDown(false)
				if lock == nil {
					if lock, err = lg.InhibitShutdown(ctx, inhibitWho, inhibitWhy); err != nil {
						return fmt.Errorf("taking the shutdown inhibitor lock again: %w", err)
					}
					m.logger.Info("holding a shutdown delay inhibitor lock again")
				}
			}
		}
	}
}

// sequence is a shutdown running in its own goroutine, which the session owns.
type sequence struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (m *Manager) startShutdown(ctx context.Context) *sequence {
	ctx, cancel := context.WithCancel(ctx)
	s := &sequence{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		m.shutdown(ctx)
	}()
	return s
}

// stop cancels the shutdown and waits for it to return.
func (s *sequence) stop() {
	s.cancel()
	<-s.done
}

// shutdown marks the node shutting down and stops the pods band by band; it returns
// when all are done or ctx ends (cancelled, or plinthd stopping).
func (m *Manager) shutdown(ctx context.Context) {
	m.setShuttingDown(true)
	st := State{StartTime: m.cfg.Clock.Now()}
	m.record(st)
	var pods []*corev1.Pod
	if m.cfg.Pods != nil {
		pods = m.cfg.Pods.Active()
	}
	for _, g := range Plan(m.cfg.Bands, pods) {
		if len(g.Pods) == 0 {
			continue // an empty band costs no time
		}
		if !m.stopBand(ctx, g) {
			break
		}
	}
	st.EndTime = m.cfg.Clock.Now()
	m.record(st)
}

// stopBand stops one band's pods in parallel and waits until they are gone or the
// band's time is up; false when ctx ended first.
func (m *Manager) stopBand(ctx context.Context, g Group) bool {
	m.logger.Info("stopping a priority band", "priority", g.Priority, "grace_period", g.GracePeriod, "pods", len(g.Pods))
	bandCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range g.Pods {
		grace := podGracePeriod(g.Band, p)
		wg.Go(func() {
			if err := m.cfg.Pods.Terminate(bandCtx, p, grace); err != nil && bandCtx.Err() == nil {
				m.logger.Warn("stopping a pod for the shutdown", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
		})
	}
	done := make(chan struct{})
	go func() { // ends when the Terminate calls do, which bandCtx bounds
		wg.Wait()
		close(done)
	}()
	timer := m.cfg.Clock.NewTimer(g.GracePeriod)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C():
		m.logger.Warn("a priority band's time is up; going on with the next", "priority", g.Priority, "grace_period", g.GracePeriod)
	case <-ctx.Done():
	}
	cancel()
	<-done
	return ctx.Err() == nil
}

// record writes st to the state file and the metrics.
func (m *Manager) record(st State) {
	m.metrics.set(st)
	if err := writeState(m.cfg.StateFile, st); err != nil {
		m.logger.Warn("writing the graceful shutdown state", "file", m.cfg.StateFile, "err", err)
	}
}

// ensureInhibitDelay raises logind's InhibitDelayMaxSec to the bands' total time when it
// is smaller: a drop-in, then a reload, then a check that logind took it (another
// drop-in later in lexical order would win).
func (m *Manager) ensureInhibitDelay(ctx context.Context, lg Logind) error {
	want := TotalGracePeriod(m.cfg.Bands)
	have, err := lg.InhibitDelayMax(ctx)
	if err != nil {
		return fmt.Errorf("reading logind's InhibitDelayMaxUSec: %w", err)
	}
	if have >= want {
		return nil
	}
	path := filepath.Join(m.cfg.LogindConfDir, DropInName)
	m.logger.Info("raising logind's InhibitDelayMaxSec", "from", have, "to", want, "drop_in", path)
	if err := writeFileAtomic(path, dropIn(want), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := lg.ReloadConfig(ctx); err != nil {
		return fmt.Errorf("asking logind to reload after writing %s: %w", path, err)
	}
	for i := 0; ; i++ {
		if have, err = lg.InhibitDelayMax(ctx); err != nil {
			return fmt.Errorf("reading logind's InhibitDelayMaxUSec after the reload: %w", err)
		}
		if have >= want {
			return nil
		}
		if i == reloadPolls || !m.sleep(ctx, reloadPollInterval) {
			break
		}
	}
	return fmt.Errorf("logind's InhibitDelayMaxSec is still %s after writing %s with %s and reloading it (a drop-in later in lexical order?); shutdowns wait at most %s",
		have, path, want, have)
}

// dropIn is the logind.conf drop-in setting InhibitDelayMaxSec to d, in whole seconds
// rounded up.
func dropIn(d time.Duration) []byte {
	return fmt.Appendf(nil, "# Written by plinthd: graceful node shutdown needs this long (shutdownGracePeriod).\n[Login]\nInhibitDelayMaxSec=%d\n",
		int64(math.Ceil(d.Seconds())))
}

// sleep waits d on the clock; false when ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	t := m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
