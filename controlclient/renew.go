package controlclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth/authapi"
)

// ErrNotRenewable means the kubeconfig does not name one file holding both the client
// certificate and its key (as plinthctl join writes it), so there is nothing to rotate:
// an embedded certificate cannot be replaced without rewriting the kubeconfig, and two
// separate files could be read half-replaced.
var ErrNotRenewable = errors.New("the kubeconfig does not reference a combined client certificate and key file")

// Renewal timing, as kubelet's certificate manager: renew at a random point between 70%
// and 90% of the certificate's lifetime, and after a failure retry with exponential
// backoff.
const (
	renewFrom       = 0.7
	renewSpread     = 0.2
	retryInitial    = 2 * time.Second
	retryMax        = 5 * time.Minute
	retryMultiplier = 2
)

// RenewerOptions tune a CertRenewer; the zero value is usable.
type RenewerOptions struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Registerer receives the renewal metrics; nil registers none.
	Registerer prometheus.Registerer
	// Jitter returns a number in [0, 1) placing each renewal within 70-90% of the
	// lifetime; nil draws at random.
	Jitter func() float64
}

// CertRenewer renews the node's client certificate before it expires, authenticated by
// the current certificate, and replaces the certificate-and-key file atomically.
// client-go reloads that file by itself when it is named in the kubeconfig (it reads it
// at most once a second for new connections and closes old connections within five
// minutes of a change), so plinthd's clients need no restart.
type CertRenewer struct {
	server   string
	ca       *x509.Certificate
	certFile string
	clock    clock.Clock
	logger   *slog.Logger
	jitter   func() float64
	errors   prometheus.Counter

	mu sync.Mutex
	// current is the certificate last read from certFile.
	current *x509.Certificate
	// deadline is when current is due for renewal, drawn once per certificate.
	deadline time.Time
}

// NewCertRenewer reads plinthd's kubeconfig. It returns an error wrapping
// ErrNotRenewable when the kubeconfig carries its certificate in a form that cannot be
// rotated.
func NewCertRenewer(kubeconfig string, o RenewerOptions) (*CertRenewer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	tc := cfg.TLSClientConfig
	if tc.CertFile == "" || tc.CertFile != tc.KeyFile || len(tc.CertData) > 0 || len(tc.KeyData) > 0 {
		return nil, fmt.Errorf("kubeconfig %s: %w (re-run plinthctl join to get one)", kubeconfig, ErrNotRenewable)
	}
	ca, err := kubeconfigCA(kubeconfig, tc)
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	r := &CertRenewer{
		server: cfg.Host, ca: ca, certFile: tc.CertFile, clock: o.Clock, logger: o.Logger, jitter: o.Jitter,
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_certificate_manager_client_expiration_renew_errors",
			Help: "Number of errors renewing the node's client certificate.",
		}),
	}
	if o.Registerer != nil {
		ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plinth_certificate_manager_client_ttl_seconds",
			Help: "Seconds until the node's client certificate expires (negative once it has).",
		}, r.ttlSeconds)
		for _, c := range []prometheus.Collector{r.errors, ttl} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("certificate renewal metrics: %w", err)
			}
		}
	}
	if _, err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// CertFile is the combined certificate-and-key file the renewer replaces.
func (r *CertRenewer) CertFile() string { return r.certFile }

func (r *CertRenewer) ttlSeconds() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil {
		return 0
	}
	return r.current.NotAfter.Sub(r.clock.Now()).Seconds()
}

// load reads the current certificate and, for a certificate not seen before, draws its
// renewal deadline.
func (r *CertRenewer) load() (*x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(r.certFile, r.certFile)
	if err != nil {
		return nil, fmt.Errorf("node client certificate %s: %w", r.certFile, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("node client certificate %s: %w", r.certFile, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || !r.current.Equal(cert) {
		r.current = cert
		r.deadline = renewalDeadline(cert, r.jitter())
	}
	return cert, nil
}

// renewalDeadline places renewal at 70% + jitter*20% of the certificate's lifetime.
func renewalDeadline(cert *x509.Certificate, jitter float64) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(time.Duration(float64(life) * (renewFrom + renewSpread*jitter)))
}

// NextRenewal returns when the current certificate is due for renewal.
func (r *CertRenewer) NextRenewal() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deadline
}

// Run renews the certificate whenever it is due, until ctx is done. Failures are logged
// and retried with backoff; they never end Run, because the node keeps working with its
// current certificate until it expires.
func (r *CertRenewer) Run(ctx context.Context) error {
	backoff := retryInitial
	for {
		var wait time.Duration
		cert, err := r.load()
		if err == nil {
			wait = r.NextRenewal().Sub(r.clock.Now())
			if wait <= 0 {
				_, err = r.RenewNow(ctx)
				if err == nil {
					backoff = retryInitial
					continue
				}
			} else {
				r.logger.Info("client certificate renewal scheduled", "at", r.NextRenewal(), "notAfter", cert.NotAfter)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.errors.Inc()
			wait = backoff
			backoff = min(backoff*retryMultiplier, retryMax)
			level := slog.LevelWarn
			if cert != nil && r.clock.Now().After(cert.NotAfter) {
				// Nothing but a new join helps once the certificate has expired.
				level = slog.LevelError
				err = fmt.Errorf("%w (the certificate expired at %s: run plinthctl join again with a new token)", err, cert.NotAfter.UTC().Format(time.RFC3339))
			}
			r.logger.Log(ctx, level, "client certificate renewal failed", "retryIn", wait, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(wait):
		}
	}
}

// RenewNow obtains a new certificate for a new key at once and installs it.
func (r *CertRenewer) RenewNow(ctx context.Context) (*x509.Certificate, error) {
	cur, err := r.load()
	if err != nil {
		return nil, err
	}
	name, ok := strings.CutPrefix(cur.Subject.CommonName, authapi.NodeUserPrefix)
	if !ok {
		return nil, fmt.Errorf("node client certificate %s is for %q, not a node (%s<name>)", r.certFile, cur.Subject.CommonName, authapi.NodeUserPrefix)
	}
	key, csr, err := newKeyAndCSR(name)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(r.ca)
	transport := &http.Transport{
		Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, RootCAs: roots,
			// Authenticated by the certificate being replaced, read fresh from disk.
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				pair, err := tls.LoadX509KeyPair(r.certFile, r.certFile)
				return &pair, err
			},
		},
	}
	defer transport.CloseIdleConnections()
	certPEM, err := requestCertificate(ctx, &http.Client{Transport: transport}, r.server, csr, "", nil)
	if err != nil {
		return nil, err
	}
	cert, combined, err := checkIssued(certPEM, key, name, r.ca, r.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(r.certFile, combined, 0o600); err != nil {
		return nil, err
	}
	if _, err := r.load(); err != nil {
		return nil, err
	}
	r.logger.Info("client certificate renewed", "node", name, "notAfter", cert.NotAfter, "nextRenewal", r.NextRenewal())
	return cert, nil
}

// kubeconfigCA is the cluster CA a kubeconfig names, inline or as a file.
func kubeconfigCA(kubeconfig string, tc rest.TLSClientConfig) (*x509.Certificate, error) {
	caPEM := tc.CAData
	if len(caPEM) == 0 && tc.CAFile != "" {
		var err error
		if caPEM, err = os.ReadFile(tc.CAFile); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: certificate-authority: %w", kubeconfig, err)
		}
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return nil, fmt.Errorf("kubeconfig %s: no CA certificate (certificate-authority-data or certificate-authority)", kubeconfig)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: CA certificate: %w", kubeconfig, err)
	}
	return ca, nil
}
