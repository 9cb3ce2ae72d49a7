package plinthd

import (
	"context"
	"log/slog"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/preflight"
)

// hostPreflight runs the preflight checks against the running system.
func hostPreflight(ctx context.Context, needs preflight.Needs) preflight.Report {
	return preflight.Run(ctx, preflight.HostEnv(), needs)
}

// checkHost runs the preflight checks (Backends.Preflight, else the running system's),
// logs one line per check (PASS at info, WARN at warn, FAIL at error level) and returns
// an error naming every FAIL: a feature the configuration needs and the host lacks, so
// plinthd would not work. It runs before plinthd changes anything on the host.
func checkHost(ctx context.Context, cfg config.Config, backends Backends, logger *slog.Logger) error {
	run := backends.Preflight
	if run == nil {
		run = hostPreflight
	}
	r := run(ctx, preflight.NeedsOf(cfg))
	for _, c := range r.Checks {
		level := slog.LevelInfo
		switch c.Status {
		case preflight.Warn:
			level = slog.LevelWarn
		case preflight.Fail:
			level = slog.LevelError
		}
		logger.Log(ctx, level, "preflight", "check", c.Name, "status", string(c.Status), "reason", c.Reason)
	}
	return r.Err()
}
