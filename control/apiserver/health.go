package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// healthCheck is one named check behind /livez, /readyz or /healthz, run on each
// request to them (each is also served alone at /readyz/NAME and the like).
type healthCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// healthCheckTimeout bounds one check, as kube-apiserver bounds its etcd check: a probe
// that hangs tells a load balancer nothing.
const healthCheckTimeout = 2 * time.Second

// health holds the checks of the three endpoints, as kube-apiserver splits them:
//   - /livez: is the process worth keeping (ping). etcd is left out on purpose:
//     restarting a replica does not bring etcd back, and a replica restarted during an
//     etcd outage cannot start at all;
//   - /readyz: should traffic come here (ping, etcd answering a quorum read, not
//     shutting down), so load balancers drain a replica that is stopping or cut off;
//   - /healthz: the legacy endpoint, ping and etcd.
type health struct {
	livez, readyz, healthz []healthCheck
	shuttingDown           atomic.Bool
	logger                 *slog.Logger

	mu     sync.Mutex
	failed map[string]string // "endpoint/check" → last failure logged

	// status (1 passing, 0 failing, as last run) and runs count the checks as
	// kube-apiserver's kubernetes_healthcheck and kubernetes_healthchecks_total do.
	status *prometheus.GaugeVec
	runs   *prometheus.CounterVec
}

func newHealth(cfg Config) (*health, error) {
	h := &health{
		logger: cfg.Logger,
		failed: map[string]string{},
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_apiserver_healthcheck",
			Help: "Result of the last run of each health check: 1 passing, 0 failing; type is livez, readyz or healthz.",
		}, []string{"name", "type"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_apiserver_healthchecks_total",
			Help: "Health check runs by name, type (livez, readyz, healthz) and status (success, error).",
		}, []string{"name", "type", "status"}),
	}
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{h.status, h.runs} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, err
			}
		}
	}
	ping := healthCheck{Name: "ping", Check: func(context.Context) error { return nil }}
	etcdRead := &sharedCheck{maxAge: etcdCheckMaxAge, now: cfg.Clock.Now, check: func(ctx context.Context) error {
		_, err := cfg.Store.CurrentRevision(ctx)
		return err
	}}
	etcd := healthCheck{Name: "etcd", Check: etcdRead.run}
	shutdown := healthCheck{Name: "shutdown", Check: func(context.Context) error {
		if h.shuttingDown.Load() {
			return errors.New("the control service is shutting down")
		}
		return nil
	}}
	h.livez = []healthCheck{ping}
	h.readyz = []healthCheck{ping, etcd, shutdown}
	h.healthz = []healthCheck{ping, etcd}
	return h, nil
}

// run runs one check of an endpoint, counts it and logs a change of its result.
func (h *health) run(ctx context.Context, endpoint string, c healthCheck) error {
	err := runCheck(ctx, c)
	if err != nil {
		h.status.WithLabelValues(c.Name, endpoint).Set(0)
		h.runs.WithLabelValues(c.Name, endpoint, "error").Inc()
		h.logFailure(endpoint, c.Name, err)
		return err
	}
	h.status.WithLabelValues(c.Name, endpoint).Set(1)
	h.runs.WithLabelValues(c.Name, endpoint, "success").Inc()
	h.logRecovery(endpoint, c.Name)
	return nil
}

// BeginShutdown makes /readyz fail from now on, while the API keeps serving, so load
// balancers stop sending new requests before the listener closes.
func (s *Server) BeginShutdown() { s.health.shuttingDown.Store(true) }

// isHealthPath reports whether path is a health endpoint or one of its single checks.
func isHealthPath(path string) bool {
	endpoint, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return endpoint == "livez" || endpoint == "readyz" || endpoint == "healthz"
}

func runCheck(ctx context.Context, c healthCheck) error {
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	return c.Check(ctx)
}

// serveHealth answers /livez, /readyz, /healthz and /ENDPOINT/CHECK as kube-apiserver
// does: "ok" when every check passes; with ?verbose, one "[+]name ok" line per check;
// on failure 500 with every check's line, failures as "[-]name failed: reason
// withheld" (the reason goes to the log, not to whoever probes). ?exclude=name skips
// a check.
func (s *Server) serveHealth(w http.ResponseWriter, req *http.Request) (verb, resource string) {
	endpoint, single, _ := strings.Cut(strings.Trim(req.URL.Path, "/"), "/")
	var checks []healthCheck
	switch endpoint {
	case "livez":
		checks = s.health.livez
	case "readyz":
		checks = s.health.readyz
	default:
		checks = s.health.healthz
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if single != "" {
		for _, c := range checks {
			if c.Name == single {
				if err := s.health.run(req.Context(), endpoint, c); err != nil {
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprintf(w, "internal server error: %s check failed: reason withheld\n", c.Name)
					return "get", endpoint
				}
				fmt.Fprint(w, "ok")
				return "get", endpoint
			}
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "%s has no check %q\n", endpoint, single)
		return "get", endpoint
	}
	excluded := map[string]bool{}
	for _, list := range req.URL.Query()["exclude"] {
		for _, name := range strings.Split(list, ",") {
			excluded[strings.TrimSpace(name)] = true
		}
	}
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if excluded[c.Name] {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.Name)
			delete(excluded, c.Name)
			continue
		}
		if err := s.health.run(req.Context(), endpoint, c); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.Name)
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.Name)
	}
	for name := range excluded {
		fmt.Fprintf(&b, "warn: some health checks cannot be excluded: no matches for %q\n", name)
	}
	_, verbose := req.URL.Query()["verbose"]
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), endpoint)
	case verbose:
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), endpoint)
	default:
		fmt.Fprint(w, "ok")
	}
	return "get", endpoint
}

// logFailure logs a failing check with its reason once per change of reason, so a
// load balancer probing every second does not flood the log.
func (h *health) logFailure(endpoint, check string, err error) {
	key := endpoint + "/" + check
	h.mu.Lock()
	changed := h.failed[key] != err.Error()
	h.failed[key] = err.Error()
	h.mu.Unlock()
	if changed {
		h.logger.Warn("health check failed", "endpoint", endpoint, "check", check, "err", err)
	}
}

func (h *health) logRecovery(endpoint, check string) {
	key := endpoint + "/" + check
	h.mu.Lock()
	_, was := h.failed[key]
	delete(h.failed, key)
	h.mu.Unlock()
	if was {
		h.logger.Info("health check passes again", "endpoint", endpoint, "check", check)
	}
}

// etcdCheckMaxAge is how long one etcd check answers every probe: load balancers
// probing each replica every second, several of them, would otherwise each cost a
// quorum read.
const etcdCheckMaxAge = time.Second

// sharedCheck runs check once for all concurrent callers and reuses its result for
// maxAge.
type sharedCheck struct {
	check  func(ctx context.Context) error
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	at      time.Time     // when the last result was taken; zero before the first
	err     error         // the last result
	running chan struct{} // closed when the run in flight ends; nil when none is
}

func (c *sharedCheck) run(ctx context.Context) error {
	c.mu.Lock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.maxAge {
		err := c.err
		c.mu.Unlock()
		return err
	}
	if running := c.running; running != nil {
		c.mu.Unlock()
		select {
		case <-running:
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	running := make(chan struct{})
	c.running = running
	c.mu.Unlock()

	// Not the caller's context alone: a prober that hangs up must not fail the
	// others waiting on this run. The timeout still bounds it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthCheckTimeout)
	err := c.check(runCtx)
	cancel()

	c.mu.Lock()
	c.at, c.err, c.running = c.now(), err, nil
	c.mu.Unlock()
	close(running)
	return err
}
