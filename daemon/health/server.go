package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// shutdownTimeout bounds how long Run waits for in-flight requests once its context
// is done; a scrape or a hung check must not hold up plinthd's shutdown for longer.
const shutdownTimeout = 5 * time.Second

// Server serves /healthz, /metrics and the handlers mounted with Handle on a local
// address.
type Server struct {
	addr     string
	checker  *Checker
	gatherer prometheus.Gatherer
	logger   *slog.Logger

	mu        sync.Mutex
	started   bool
	boundAddr string
	listening chan struct{} // closed once the socket is bound
	extra     []route       // mounted by Handle before Run
}

// route is an extra handler and the pattern it is mounted on.
type route struct {
	pattern string
	handler http.Handler
}

// NewServer returns a Server that will listen on addr ("127.0.0.1:10248",
// "127.0.0.1:0" in tests). checker may be nil (always healthy); a nil gatherer leaves
// /metrics unserved (404).
func NewServer(addr string, checker *Checker, gatherer prometheus.Gatherer, logger *slog.Logger) *Server {
	if checker == nil {
		checker = NewChecker()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		addr:      addr,
		checker:   checker,
		gatherer:  gatherer,
		logger:    logger,
		listening: make(chan struct{}),
	}
}

// Handle mounts handler on pattern (net/http.ServeMux syntax, such as
// "GET /pressure") beside /healthz and /metrics, for other subsystems' local
// read-only views. It must be called before Run; calling it later, with an empty
// pattern or a nil handler is a wiring bug and panics, as does a pattern the mux
// refuses when Run builds it.
func (s *Server) Handle(pattern string, handler http.Handler) {
	if pattern == "" || handler == nil {
		panic(fmt.Sprintf("health: Handle(%q) needs a pattern and a handler", pattern))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic(fmt.Sprintf("health: Handle(%q) called after Run", pattern))
	}
	s.extra = append(s.extra, route{pattern, handler})
}

// Addr returns the address the server is listening on (with the real port when addr
// asked for port 0), or "" before it is listening.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.boundAddr
}

// Listening is closed once the server's socket is bound and Addr is valid. It is never
// closed if Run fails to listen, so wait on it together with Run's result.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Run listens on the address, serves until ctx is done, then shuts down gracefully,
// letting in-flight requests finish for up to a few seconds. It fails at once when the
// address cannot be bound (taken by another process, say), and returns nil on a clean
// stop. A Server runs once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return fmt.Errorf("health server on %s: Run called twice", s.addr)
	}
	s.started = true
	s.mu.Unlock()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("health server: listen on %s (healthz/metrics address): %w", s.addr, err)
	}
	s.mu.Lock()
	s.boundAddr = ln.Addr().String()
	s.mu.Unlock()
	close(s.listening)

	srv := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.logger.Info("health server listening", "addr", ln.Addr().String())

	select {
	case err := <-serveErr:
		// Serve only returns early on a broken listener.
		return fmt.Errorf("health server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	// ctx is already done, so the shutdown deadline needs a context of its own.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Requests still running (a hung check): cut them off rather than leak them.
		err = errors.Join(err, srv.Close())
	}
	if serr := <-serveErr; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("health server on %s: shutdown: %w", ln.Addr(), err)
	}
	return nil
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	s.mu.Lock()
	extra := s.extra
	s.mu.Unlock()
	for _, r := range extra {
		mux.Handle(r.pattern, r.handler)
	}
	if s.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelError),
			// A collector that fails should not hide every other metric.
			ErrorHandling: promhttp.ContinueOnError,
		}))
	}
	return mux
}

// serveHealthz answers like kubelet's /healthz: "ok" when every check passes; on
// failure 500 and one "[-]name failed: reason" line per failing check. With
// ?verbose every check gets a line, passing ones as "[+]name ok". Unlike kubelet the
// reason is shown: this endpoint is meant for the node's own operator and probes.
func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	results := s.checker.run()
	_, verbose := r.URL.Query()["verbose"]
	failed := false
	for _, res := range results {
		if res.err != nil {
			failed = true
		}
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	if !failed && !verbose {
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprint(w, "ok")
		return
	}

	var b strings.Builder
	for _, res := range results {
		switch {
		case res.err != nil:
			fmt.Fprintf(&b, "[-]%s failed: %s\n", res.name, oneLine(res.err.Error()))
		case verbose:
			fmt.Fprintf(&b, "[+]%s ok\n", res.name)
		}
	}
	status := http.StatusOK
	if failed {
		status = http.StatusInternalServerError
		b.WriteString("healthz check failed\n")
	} else {
		b.WriteString("healthz check passed\n")
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprint(w, b.String())
}

// oneLine keeps a multi-line reason (an errors.Join, say) on its check's line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ").Replace(s)
}
