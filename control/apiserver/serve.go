package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// headerTableBytes bounds each HTTP/2 connection's header compression tables.
const headerTableBytes = 1024

// Serve serves handler on ln over TLS until ctx is done, then ends open requests (watches
// see their context cancelled) and returns. tc must require and verify client
// certificates, or verify them when given (when bearer tokens are also accepted): the
// handler authenticates every request and never serves anonymous clients.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, tc *tls.Config, logger *slog.Logger) error {
	if tc == nil || tc.ClientCAs == nil ||
		(tc.ClientAuth != tls.RequireAndVerifyClientCert && tc.ClientAuth != tls.VerifyClientCertIfGiven) {
		return errors.New("serve: the TLS configuration must verify client certificates against the cluster CA")
	}
	tc = tc.Clone()
	if len(tc.NextProtos) == 0 {
		tc.NextProtos = []string{"h2", "http/1.1"}
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tc,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		HTTP2: &http.HTTP2Config{
			// Each connection keeps an HPACK table per direction, 4 KiB each by
			// default; with one connection per node that was 40 MiB of heap at 5,000
			// nodes, scanned by every garbage collection. The headers repeated on a
			// connection (user agent, accept, content type) fit in 1 KiB.
			MaxDecoderHeaderTableSize: headerTableBytes,
			MaxEncoderHeaderTableSize: headerTableBytes,
		},
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	// Request contexts derive from ctx, so watches are ending now; let them finish their
	// streams before Shutdown sends GOAWAY and closes connections.
	if d, ok := handler.(interface{ WaitForWatches(time.Duration) }); ok {
		d.WaitForWatches(2 * time.Second)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}
