package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// TLSConfig is how the API is served: only TLS, and only to clients whose certificate
// the cluster CA signed.
type TLSConfig struct {
	CertFile, KeyFile string
	ClientCAs         *x509.CertPool
}

// Serve serves handler on ln over TLS until ctx is done, then ends open requests (watches
// see their context cancelled) and returns. Every request must present a client
// certificate signed by ClientCAs: the handshake fails otherwise.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, tc TLSConfig, logger *slog.Logger) error {
	cert, err := tls.LoadX509KeyPair(tc.CertFile, tc.KeyFile)
	if err != nil {
		return fmt.Errorf("serving certificate %s / key %s: %w", tc.CertFile, tc.KeyFile, err)
	}
	if tc.ClientCAs == nil {
		return errors.New("serve: no client CA pool: the API never serves anonymous clients")
	}
	srv := &http.Server{
		Handler: WithClientCertAuth(handler),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    tc.ClientCAs,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2", "http/1.1"},
		},
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}
