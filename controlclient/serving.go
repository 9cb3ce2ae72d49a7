package controlclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth/authapi"
)

// servingRecheck is how often the manager looks at the node's names between renewals,
// so a changed address gets a certificate that covers it.
const servingRecheck = time.Minute

// ServingNames returns the DNS names and IP addresses the serving certificate must
// cover: the node's names as its Node reports them.
type ServingNames func() (dnsNames []string, ips []net.IP)

// ServingCertManager keeps the node API's serving certificate in one PEM file
// (certificate then key): it asks the control service for one whenever the file is
// missing, does not cover the node's current names, or is due for renewal (70-90% of
// its lifetime, as the client certificate), authenticated by the node's client
// credentials. The key is generated here and never leaves the node.
type ServingCertManager struct {
	server    string
	ca        *x509.Certificate
	transport http.RoundTripper
	file      string
	node      string
	names     ServingNames
	clock     clock.Clock
	logger    *slog.Logger
	jitter    func() float64
	errors    prometheus.Counter

	mu       sync.Mutex
	current  *x509.Certificate
	deadline time.Time
}

// NewServingCertManager reads plinthd's kubeconfig for the control service, the cluster
// CA and the node's client credentials.
func NewServingCertManager(kubeconfig, file, node string, names ServingNames, o RenewerOptions) (*ServingCertManager, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	ca, err := kubeconfigCA(kubeconfig, cfg.TLSClientConfig)
	if err != nil {
		return nil, err
	}
	// client-go's transport reloads a renewed client certificate file by itself.
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Jitter == nil {
		o.Jitter = mathrand.Float64
	}
	m := &ServingCertManager{
		server: cfg.Host, ca: ca, transport: transport, file: file, node: node, names: names,
		clock: o.Clock, logger: o.Logger, jitter: o.Jitter,
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_server_expiration_renew_errors",
			Help: "Number of errors obtaining or renewing the node API's serving certificate.",
		}),
	}
	if o.Registerer != nil {
		ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plinth_certificate_manager_server_ttl_seconds",
			Help: "Seconds until the node API's serving certificate expires (negative once it has).",
		}, m.ttlSeconds)
		for _, c := range []prometheus.Collector{m.errors, ttl} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("serving certificate metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *ServingCertManager) ttlSeconds() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == nil {
		return 0
	}
	return m.current.NotAfter.Sub(m.clock.Now()).Seconds()
}

// File is the certificate-and-key file the manager writes.
func (m *ServingCertManager) File() string { return m.file }

// load reads the current file, if any, drawing a renewal deadline for a certificate
// not seen before.
func (m *ServingCertManager) load() *x509.Certificate {
	pair, err := tls.LoadX509KeyPair(m.file, m.file)
	if err != nil {
		return nil
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == nil || !m.current.Equal(cert) {
		m.current = cert
		m.deadline = renewalDeadline(cert, m.jitter())
	}
	return cert
}

// why says why a new certificate is needed, or "" when the current one serves.
func (m *ServingCertManager) why(cert *x509.Certificate, dnsNames []string, ips []net.IP) string {
	if cert == nil {
		return "no usable serving certificate in " + m.file
	}
	pool := x509.NewCertPool()
	pool.AddCert(m.ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: m.clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return "the serving certificate does not verify against the cluster CA: " + err.Error()
	}
	for _, d := range dnsNames {
		if !slices.Contains(cert.DNSNames, d) {
			return "the serving certificate does not name " + d
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return "the serving certificate does not name " + ip.String()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.clock.Now().Before(m.deadline) {
		return "the serving certificate is due for renewal"
	}
	return ""
}

// Ensure requests a new certificate when the current one is missing, does not cover
// the node's names or is due, and reports whether it did.
func (m *ServingCertManager) Ensure(ctx context.Context) (bool, error) {
	dnsNames, ips := m.names()
	reason := m.why(m.load(), dnsNames, ips)
	if reason == "" {
		return false, nil
	}
	m.logger.Info("requesting a serving certificate", "reason", reason, "dnsNames", dnsNames, "ips", ips)
	if _, err := m.request(ctx, dnsNames, ips); err != nil {
		return false, err
	}
	return true, nil
}

func (m *ServingCertManager) request(ctx context.Context, dnsNames []string, ips []net.IP) (*x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: authapi.NodeUserPrefix + m.node, Organization: []string{authapi.NodesGroup}},
		DNSNames: dnsNames, IPAddresses: ips,
	}, key)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate request: %w", err)
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	certPEM, err := requestCertificate(ctx, &http.Client{Transport: m.transport}, m.server, csr, authapi.UsageServing, nil)
	if err != nil {
		return nil, err
	}
	cert, combined, err := checkIssuedServing(certPEM, key, dnsNames, ips, m.ca, m.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(m.file, combined, 0o600); err != nil {
		return nil, err
	}
	m.load()
	m.logger.Info("serving certificate installed", "file", m.file, "notAfter", cert.NotAfter)
	return cert, nil
}

// checkIssuedServing verifies the answer is a server certificate for key naming every
// requested name and chaining to ca, and returns it with the PEM file to store.
func checkIssuedServing(certPEM []byte, key *ecdsa.PrivateKey, dnsNames []string, ips []net.IP, ca *x509.Certificate, now time.Time) (*x509.Certificate, []byte, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("the control service answered without a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the issued serving certificate does not parse: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("the issued serving certificate is for another key")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, nil, fmt.Errorf("the issued serving certificate does not verify against the cluster CA: %w", err)
	}
	for _, d := range dnsNames {
		if err := cert.VerifyHostname(d); err != nil {
			return nil, nil, fmt.Errorf("the issued serving certificate: %w", err)
		}
	}
	for _, ip := range ips {
		if err := cert.VerifyHostname(ip.String()); err != nil {
			return nil, nil, fmt.Errorf("the issued serving certificate: %w", err)
		}
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	combined := append(pem.EncodeToMemory(block), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	return cert, combined, nil
}

// Run keeps the certificate current until ctx is done: at each renewal deadline, and
// every minute for a change of the node's names. Failures are logged and retried with
// backoff; the node API keeps serving the current certificate meanwhile.
func (m *ServingCertManager) Run(ctx context.Context) error {
	backoff := retryInitial
	for {
		wait := servingRecheck
		if _, err := m.Ensure(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.errors.Inc()
			wait = backoff
			backoff = min(backoff*retryMultiplier, retryMax)
			m.logger.Warn("serving certificate request failed", "retryIn", wait, "err", err)
		} else {
			backoff = retryInitial
			m.mu.Lock()
			if d := m.deadline.Sub(m.clock.Now()); m.current != nil && d < wait {
				wait = max(d, 0)
			}
			m.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.clock.After(wait):
		}
	}
}
