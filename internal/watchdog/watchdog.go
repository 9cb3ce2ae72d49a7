package watchdog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"k8s.io/utils/clock"
)

// minInterval is the shortest ping interval: pinging faster only costs wakeups, and
// systemd's own timer granularity makes sub-second watchdogs unreliable anyway.
const minInterval = time.Second

// IntervalFromEnv returns how often to ping: half of the WatchdogSec systemd passed in
// WATCHDOG_USEC (as sd_watchdog_enabled(3) recommends), at least one second. It
// returns 0 when the watchdog is not enabled for this process: WATCHDOG_USEC unset, or
// WATCHDOG_PID naming another process.
func IntervalFromEnv() (time.Duration, error) {
	timeout, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, fmt.Errorf("systemd watchdog: WATCHDOG_USEC=%q WATCHDOG_PID=%q (want a positive number of microseconds and a pid): %w",
			os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), err)
	}
	return pingInterval(timeout), nil
}

// pingInterval turns a watchdog timeout into a ping interval; 0 stays 0 (disabled).
func pingInterval(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return 0
	}
	return max(timeout/2, minInterval)
}

// Watchdog sends WATCHDOG=1 at a fixed interval while the daemon is healthy.
type Watchdog struct {
	notifier Notifier
	interval time.Duration
	healthy  func() error
	clock    clock.WithTicker
	logger   *slog.Logger
}

// New returns a Watchdog that pings n every interval while healthy returns nil.
// interval 0 disables it (Run then only waits for its context). healthy may block:
// a check that hangs withholds the ping, which is what lets systemd restart a hung
// daemon. A nil healthy counts as always healthy.
func New(n Notifier, interval time.Duration, healthy func() error, clk clock.WithTicker, logger *slog.Logger) *Watchdog {
	if healthy == nil {
		healthy = func() error { return nil }
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Watchdog{notifier: n, interval: interval, healthy: healthy, clock: clk, logger: logger}
}

// Run pings once at start and then every interval until ctx is done, skipping every
// ping while the health checks fail. It logs only when health or the ability to reach
// systemd changes, not on every tick. It returns nil when ctx is done; failures to
// notify are logged, never returned, because losing the watchdog must not stop the
// daemon's real work (systemd will act on the missing pings itself).
func (w *Watchdog) Run(ctx context.Context) error {
	if w.interval <= 0 {
		w.logger.Debug("systemd watchdog disabled")
		<-ctx.Done()
		return nil
	}
	ticker := w.clock.NewTicker(w.interval)
	defer ticker.Stop()
	w.logger.Info("systemd watchdog enabled", "interval", w.interval)

	var s tickState
	w.tick(&s)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			w.tick(&s)
		}
	}
}

// tickState remembers what was last logged, so each change is logged once.
type tickState struct {
	unhealthy  bool
	notifyFail bool
}

func (w *Watchdog) tick(s *tickState) {
	if err := w.healthy(); err != nil {
		if !s.unhealthy {
			w.logger.Error("health checks failing, withholding systemd watchdog pings so systemd restarts plinthd if this persists",
				"err", err)
			s.unhealthy = true
		}
		return
	}
	if s.unhealthy {
		w.logger.Info("health checks pass again, resuming systemd watchdog pings")
		s.unhealthy = false
	}
	if err := w.notifier.Notify(daemon.SdNotifyWatchdog); err != nil {
		if !s.notifyFail {
			w.logger.Error("systemd watchdog ping failed", "err", err)
			s.notifyFail = true
		}
		return
	}
	if s.notifyFail {
		w.logger.Info("systemd watchdog pings reach systemd again")
		s.notifyFail = false
	}
}
