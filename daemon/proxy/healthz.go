package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// healthState is kube-proxy's notion of health: a change queued for the rules must be
// applied within the timeout (2 × syncPeriod). It is safe for concurrent use.
type healthState struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu sync.Mutex
	// oldestQueued is when the oldest change not yet applied was queued (zero: none).
	oldestQueued time.Time
	// queuedDuringSync is the first change queued after the running sync started:
	// that sync's success does not apply it.
	queuedDuringSync time.Time
	lastUpdated      time.Time
}

func newHealthState(c clock.PassiveClock, timeout time.Duration) *healthState {
	return &healthState{clock: c, timeout: timeout}
}

// queued notes a change waiting for a sync (or a failed sync that left one waiting).
func (h *healthState) queued() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	if h.oldestQueued.IsZero() {
		h.oldestQueued = now
	}
	if h.queuedDuringSync.IsZero() {
		h.queuedDuringSync = now
	}
	return now
}

// syncStarted notes that a sync took every change queued so far.
func (h *healthState) syncStarted() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queuedDuringSync = time.Time{}
}

// synced notes a successful sync: the changes it took are applied.
func (h *healthState) synced() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUpdated = h.clock.Now()
	h.oldestQueued = h.queuedDuringSync
}

// healthy reports whether no change has waited longer than the timeout, with the
// times /healthz shows.
func (h *healthState) healthy() (ok bool, lastUpdated, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now = h.clock.Now()
	ok = h.oldestQueued.IsZero() || now.Sub(h.oldestQueued) < h.timeout
	return ok, h.lastUpdated, now
}

// check is healthState as a plinthd health check (node state ignored, like /livez).
func (h *healthState) check() error {
	ok, last, now := h.healthy()
	if ok {
		return nil
	}
	h.mu.Lock()
	since := h.oldestQueued
	h.mu.Unlock()
	return fmt.Errorf("a Service change queued %s ago is not applied (timeout %s; last successful sync %s)",
		now.Sub(since).Round(time.Millisecond), h.timeout, describeTime(last))
}

func describeTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// healthBody is kube-proxy's /healthz JSON; /livez leaves out nodeEligible.
type healthBody struct {
	LastUpdated  string `json:"lastUpdated"`
	CurrentTime  string `json:"currentTime"`
	NodeEligible *bool  `json:"nodeEligible,omitempty"`
}

// healthHandler serves /healthz (503 also while this Node is being deleted, so load
// balancers drain it) and /livez (sync health only).
type healthHandler struct {
	state        *healthState
	nodeDeleting func() bool
	metrics      *metrics
}

func (h healthHandler) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { h.serve(w, true) })
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) { h.serve(w, false) })
	return mux
}

func (h healthHandler) serve(w http.ResponseWriter, withNode bool) {
	ok, last, now := h.state.healthy()
	body := healthBody{CurrentTime: now.UTC().Format(time.RFC3339Nano)}
	if !last.IsZero() {
		body.LastUpdated = last.UTC().Format(time.RFC3339Nano)
	}
	counter := h.metrics.livez
	if withNode {
		eligible := !h.nodeDeleting()
		body.NodeEligible = &eligible
		ok = ok && eligible
		counter = h.metrics.healthz
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	counter.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// serveHealth listens on addr and serves h until ctx is done. listening, when not nil,
// receives the bound address.
func serveHealth(ctx context.Context, addr string, handler http.Handler, listening func(net.Addr), logger *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("proxy health server: listen on %s (proxy.healthzBindAddress): %w", addr, err)
	}
	if listening != nil {
		listening(ln.Addr())
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("proxy health server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
