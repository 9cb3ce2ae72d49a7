package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ExternalConfig says how to reach an etcd cluster run outside the control service, as
// kube-apiserver's --etcd-servers, --etcd-cafile, --etcd-certfile and --etcd-keyfile do.
type ExternalConfig struct {
	// Endpoints are URLs: http:// or unix:// in the clear, https:// or unixs:// over
	// TLS. One cluster is reached one way, so the two kinds do not mix. Over unixs://
	// the member's certificate must name the socket's file name: the etcd client
	// verifies it against that.
	Endpoints []string
	// CAFile holds the PEM certificates that may sign the members' serving
	// certificates; empty trusts the system's roots.
	CAFile string
	// CertFile and KeyFile are the client certificate etcd's --client-cert-auth asks
	// for. Both or neither; they are read again at every TLS handshake, so rotating
	// them needs no restart.
	CertFile, KeyFile string
	// ReadyTimeout bounds how long ConnectExternal waits for a member to answer.
	ReadyTimeout time.Duration
	// Logger receives the etcd client's warnings and the connection attempts (nil:
	// discarded).
	Logger *slog.Logger
}

// secure reports whether the endpoints ask for TLS. Validate has checked they agree.
func (c ExternalConfig) secure() bool {
	for _, ep := range c.Endpoints {
		if u, err := url.Parse(ep); err == nil && (u.Scheme == "https" || u.Scheme == "unixs") {
			return true
		}
	}
	return false
}

// Validate checks the endpoints and the pairing of the TLS files without reading any
// file; errors name the flag an operator sets.
func (c ExternalConfig) Validate() error {
	var errs []error
	var clear, tlsOnes []string
	for _, ep := range c.Endpoints {
		u, err := url.Parse(ep)
		switch {
		case err == nil && (u.Scheme == "http" || u.Scheme == "unix"):
			clear = append(clear, ep)
		case err == nil && (u.Scheme == "https" || u.Scheme == "unixs"):
			tlsOnes = append(tlsOnes, ep)
		default:
			errs = append(errs, fmt.Errorf("--etcd-servers: %q: want a URL starting http://, https://, unix:// or unixs://, such as https://10.0.0.1:2379", ep))
		}
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			errs = append(errs, fmt.Errorf("--etcd-servers: %q has no host", ep))
		}
	}
	if len(clear) > 0 && len(tlsOnes) > 0 {
		errs = append(errs, fmt.Errorf("--etcd-servers: %s in the clear and %s over TLS: one cluster is reached one way", strings.Join(clear, ","), strings.Join(tlsOnes, ",")))
	}
	tlsFiles := c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
	if tlsFiles && len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile are for an external etcd: give --etcd-servers too"))
	} else if tlsFiles && len(tlsOnes) == 0 && len(clear) > 0 {
		errs = append(errs, fmt.Errorf("--etcd-cafile/--etcd-certfile/--etcd-keyfile are given but --etcd-servers %s are not TLS endpoints: use https:// or unixs://", strings.Join(clear, ",")))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile go together: give both or neither"))
	}
	return errors.Join(errs...)
}

// tlsConfig reads the CA and the client certificate once, so a wrong file is reported
// before anything dials, and keeps reading the certificate at every handshake.
func (c ExternalConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		data, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--etcd-cafile: %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		if _, err := c.loadClientCertificate(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.loadClientCertificate()
		}
	}
	return cfg, nil
}

func (c ExternalConfig) loadClientCertificate() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--etcd-certfile %s, --etcd-keyfile %s: %w", c.CertFile, c.KeyFile, err)
	}
	return &cert, nil
}

// External is a client of an external etcd cluster that has answered at least once.
type External struct {
	Client *clientv3.Client
	// Endpoint and Version are the member that answered first and its etcd version.
	Endpoint, Version string
	// TLS says whether the connection is encrypted.
	TLS     bool
	closing *atomic.Bool
}

// Close closes the client; the client's complaints about its closing connections are
// dropped.
func (e *External) Close() {
	e.closing.Store(true)
	_ = e.Client.Close()
}

// statusAttemptTimeout bounds one member's answer to one status request, and the
// connection probeTransport makes when it fails.
const statusAttemptTimeout = 5 * time.Second

// ConnectExternal connects to an external etcd cluster and waits until one of its
// members answers a status request, so a wrong address, an untrusted certificate or a
// refused client certificate stops the control service at start with the reason
// instead of leaving it serving errors. Each failed round is logged as a warning; after
// ReadyTimeout the last reason is returned.
func ConnectExternal(ctx context.Context, cfg ExternalConfig) (*External, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	closing := new(atomic.Bool)
	clientCfg := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: statusAttemptTimeout,
		Logger:      newEtcdLogger(logger, closing),
		Context:     ctx,
	}
	if cfg.secure() {
		t, err := cfg.tlsConfig()
		if err != nil {
			return nil, err
		}
		clientCfg.TLS = t
	}
	c, err := clientv3.New(clientCfg)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	ext := &External{Client: c, TLS: clientCfg.TLS != nil, closing: closing}
	answered := false
	defer func() {
		if !answered {
			ext.Close()
		}
	}()
	attemptTimeout := statusAttemptTimeout
	if cfg.ReadyTimeout > 0 {
		attemptTimeout = min(attemptTimeout, cfg.ReadyTimeout)
	}
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for attempt := 1; ; attempt++ {
		var reasons []string
		for _, ep := range cfg.Endpoints {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			st, err := c.Status(actx, ep)
			cancel()
			if err == nil {
				ext.Endpoint, ext.Version = ep, st.Version
				answered = true
				return ext, nil
			}
			// The client retries until the deadline and then reports only that; a
			// connection of our own says what went wrong underneath.
			if cause := probeTransport(ctx, ep, clientCfg.TLS); cause != nil {
				err = cause
			}
			reasons = append(reasons, fmt.Sprintf("%s: %v", ep, err))
		}
		reason := strings.Join(reasons, "; ")
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("etcd: no member answered within %s: %s", cfg.ReadyTimeout, reason)
		}
		logger.Warn("etcd: no member answered yet", "attempt", attempt, "reason", reason)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// probeTransport connects to one endpoint as the etcd client would, through the TLS
// handshake and, since TLS 1.3 servers refuse a client certificate only after it, one
// read, and returns what failed, or nil when the transport works.
func probeTransport(ctx context.Context, endpoint string, tlsCfg *tls.Config) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil
	}
	network, addr := "tcp", u.Host
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		network, addr = "unix", u.Host+u.Path
	}
	ctx, cancel := context.WithTimeout(ctx, statusAttemptTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if tlsCfg == nil {
		return nil
	}
	cfg := tlsCfg.Clone()
	cfg.NextProtos = []string{"h2"} // etcd serves gRPC over HTTP/2
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
		if network == "unix" {
			// The etcd client verifies a member on a unix socket against the
			// socket's file name (gRPC's authority for it), so do the same.
			cfg.ServerName = path.Base(addr)
		}
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return err
	}
	// A server that accepted the client waits for the HTTP/2 preface and sends
	// nothing: the read times out. One that refused it sends an alert.
	_ = tc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := tc.Read(make([]byte, 1)); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	return nil
}
