// Package profiling serves Go's pprof endpoints for plinth-control
// (--profiling-address) and plinthd (profilingAddress), to find where CPU and memory go
// under load; the benchmarks fetch profiles from it.
//
// It owns the HTTP server on the listener it is given, and touches nothing else.
package profiling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Serve serves Go's pprof endpoints under /debug/pprof/ on ln until ctx ends. They
// carry no authentication, so the listener belongs on loopback. setting names the
// flag or field that asked for it, for the error.
func Serve(ctx context.Context, ln net.Listener, setting string, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("serving pprof profiles", "address", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("pprof server (%s): %w", setting, err)
	}
	return nil
}
