package pki

import (
	"crypto"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plinth/plinth/internal/atomicfile"
	"k8s.io/utils/clock"
)

// File names inside the authority's directory.
const (
	caCertFileName      = "ca.crt"
	caKeyFileName       = "ca.key"
	servingCertFileName = "serving.crt"
	servingKeyFileName  = "serving.key"

	certFileMode = 0o644
	keyFileMode  = 0o600
	// The directory holds the CA key; nobody but the control service needs to list it.
	dirMode = 0o700

	servingCommonName = "plinth-control"
	caCommonPrefix    = "plinth-ca@"
)

// Options tunes LoadOrCreate. The zero value is usable.
type Options struct {
	// ServingHosts are the DNS names and IP addresses the serving certificate must
	// cover, in addition to localhost, 127.0.0.1, ::1 and the machine's hostname.
	ServingHosts []string
	// Clock decides validity periods and expiry; nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives a line whenever a certificate is created or re-issued and why;
	// nil discards.
	Logger *slog.Logger
}

// Authority is the cluster CA plus the control service's serving certificate, kept as
// files under one directory (for example <data-dir>/pki). It is safe for concurrent use:
// nothing in it changes after LoadOrCreate returns.
type Authority struct {
	dir     string
	clock   clock.PassiveClock
	caCert  *x509.Certificate
	caPEM   []byte
	caKey   crypto.Signer
	serving tls.Certificate
}

// LoadOrCreate opens the authority kept in dir, creating dir, the CA and the serving
// certificate on first use. It is idempotent: an existing CA is always reused (replacing
// it would invalidate every credential it ever issued), and the serving certificate is
// re-issued only when it is missing, unreadable, not signed by the CA, lacks one of the
// wanted hosts, or is within RenewBefore of expiry.
//
// Invalid ServingHosts are reported before anything is written.
func LoadOrCreate(dir string, opts Options) (*Authority, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	hosts, err := parseServingHosts(opts.ServingHosts)
	if err != nil {
		return nil, err
	}
	defaults := []string{"localhost", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err != nil {
		log.Warn("serving certificate will not cover the hostname", "err", err)
	} else if problems := dnsNameProblems(strings.ToLower(name)); len(problems) > 0 {
		log.Warn("serving certificate will not cover the hostname: not a DNS name", "hostname", name, "problems", problems)
	} else {
		defaults = append(defaults, name)
	}
	defaultHosts, err := parseServingHosts(defaults)
	if err != nil {
		return nil, fmt.Errorf("default serving hosts: %w", err)
	}
	hosts = mergeServingHosts(hosts, defaultHosts)

	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("create PKI directory: %w", err)
	}
	a := &Authority{dir: dir, clock: clk}
	if err := a.loadOrCreateCA(log); err != nil {
		return nil, err
	}
	if err := a.ensureServingCert(hosts, log); err != nil {
		return nil, err
	}
	return a, nil
}

// CAFile is the path of the CA certificate (PEM).
func (a *Authority) CAFile() string { return filepath.Join(a.dir, caCertFileName) }

// CAPEM returns a copy of the CA certificate in PEM form, for kubeconfigs and clients.
func (a *Authority) CAPEM() []byte { return append([]byte(nil), a.caPEM...) }

// ServingCertFile is the path of the serving certificate (PEM).
func (a *Authority) ServingCertFile() string { return filepath.Join(a.dir, servingCertFileName) }

// ServingKeyFile is the path of the serving certificate's private key (PEM, mode 0600).
func (a *Authority) ServingKeyFile() string { return filepath.Join(a.dir, servingKeyFileName) }

func (a *Authority) caKeyFile() string { return filepath.Join(a.dir, caKeyFileName) }

// ClientCAs returns a new pool holding only the cluster CA: the trust anchor for client
// certificates. Each call returns a fresh pool so a caller cannot widen another's trust.
func (a *Authority) ClientCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(a.caCert)
	return pool
}

// ServerTLSConfig returns the TLS configuration plinth-control serves with: the serving
// certificate, and a client certificate signed by the cluster CA required of every
// client (there is no anonymous access).
func (a *Authority) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{a.serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    a.ClientCAs(),
	}
}

// IssueClientCert signs a new client certificate whose CommonName is user and whose
// Organizations are groups, with a fresh ECDSA P-256 key. A zero validity means
// LeafValidity; the certificate never outlives the CA.
func (a *Authority) IssueClientCert(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("issue client certificate: user is empty")
	}
	for i, g := range groups {
		if g == "" {
			return nil, nil, fmt.Errorf("issue client certificate for %q: group [%d] is empty", user, i)
		}
	}
	if validity < 0 {
		return nil, nil, fmt.Errorf("issue client certificate for %q: validity %v is negative: want a positive duration, or 0 for the default %v", user, validity, LeafValidity)
	}
	if validity == 0 {
		validity = LeafValidity
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: append([]string(nil), groups...)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	certPEM, keyPEM, err = a.issueLeaf(template, validity)
	if err != nil {
		return nil, nil, fmt.Errorf("issue client certificate for %q: %w", user, err)
	}
	return certPEM, keyPEM, nil
}

// issueLeaf signs template with the CA for a fresh key.
func (a *Authority) issueLeaf(template *x509.Certificate, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	certPEM, err = a.signLeaf(template, key.Public(), validity)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeECKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// signLeaf signs template for pub, valid from now for validity, cut short at the CA's
// own expiry. NotBefore is backdated by clockSkew, so a peer whose clock runs a little
// behind accepts it, but by no more than a twentieth of the lifetime, so short-lived
// certificates renewed at 70-90% of their lifetime still renew before they expire.
func (a *Authority) signLeaf(template *x509.Certificate, pub crypto.PublicKey, validity time.Duration) ([]byte, error) {
	now := a.clock.Now()
	template.NotBefore = now.Add(-min(clockSkew, validity/20))
	template.NotAfter = now.Add(validity)
	if template.NotAfter.After(a.caCert.NotAfter) {
		template.NotAfter = a.caCert.NotAfter
	}
	template.BasicConstraintsValid = true
	_, certPEM, err := signCertificate(template, a.caCert, pub, a.caKey)
	return certPEM, err
}

// SignClientCertificate signs a client certificate for a key held elsewhere — a joining
// node keeps its private key — with CommonName user and Organizations groups. The
// caller has checked that the requester may have this identity.
func (a *Authority) SignClientCertificate(pub crypto.PublicKey, user string, groups []string, validity time.Duration) ([]byte, error) {
	if user == "" || validity <= 0 {
		return nil, fmt.Errorf("sign client certificate for %q: need a user and a positive validity (got %v)", user, validity)
	}
	usage := x509.KeyUsageDigitalSignature
	if _, ok := pub.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: append([]string(nil), groups...)},
		KeyUsage:    usage,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	certPEM, err := a.signLeaf(template, pub, validity)
	if err != nil {
		return nil, fmt.Errorf("sign client certificate for %q: %w", user, err)
	}
	return certPEM, nil
}

// SignServingCertificate signs a server-authentication certificate for a key held
// elsewhere (a node's API), with CommonName user, Organizations groups and the given
// DNS and IP SANs. The caller has checked the names belong to the requester.
func (a *Authority) SignServingCertificate(pub crypto.PublicKey, user string, groups, dnsNames []string, ips []net.IP, validity time.Duration) ([]byte, error) {
	if user == "" || validity <= 0 || len(dnsNames)+len(ips) == 0 {
		return nil, fmt.Errorf("sign serving certificate for %q: need a user, a positive validity (got %v) and at least one name", user, validity)
	}
	usage := x509.KeyUsageDigitalSignature
	if _, ok := pub.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: append([]string(nil), groups...)},
		KeyUsage:    usage,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    append([]string(nil), dnsNames...),
		IPAddresses: append([]net.IP(nil), ips...),
	}
	certPEM, err := a.signLeaf(template, pub, validity)
	if err != nil {
		return nil, fmt.Errorf("sign serving certificate for %q: %w", user, err)
	}
	return certPEM, nil
}

// CACertificate returns the cluster CA certificate.
func (a *Authority) CACertificate() *x509.Certificate { return a.caCert }

// loadOrCreateCA reads ca.crt and ca.key, or creates both when neither exists. One
// without the other is an error rather than a reason to start over, because a new CA
// would silently lock out every node and admin holding credentials from the old one.
func (a *Authority) loadOrCreateCA(log *slog.Logger) error {
	certPath, keyPath := a.CAFile(), a.caKeyFile()
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	certMissing, keyMissing := errors.Is(certErr, fs.ErrNotExist), errors.Is(keyErr, fs.ErrNotExist)
	switch {
	case certMissing && keyMissing:
		return a.createCA(log)
	case certMissing:
		return fmt.Errorf("%s does not exist but %s does: restore the CA certificate, or remove both files to create a new CA (which invalidates every credential issued so far)", certPath, keyPath)
	case keyMissing:
		return fmt.Errorf("%s does not exist but %s does: restore the CA key, or remove both files to create a new CA (which invalidates every credential issued so far)", keyPath, certPath)
	case certErr != nil:
		return fmt.Errorf("read CA certificate: %w", certErr)
	case keyErr != nil:
		return fmt.Errorf("read CA key: %w", keyErr)
	}

	cert, err := parseCertificatePEM(certPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", certPath, err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return fmt.Errorf("%s: certificate %q is not a CA: basic constraints CA:TRUE missing", certPath, cert.Subject.CommonName)
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("%s: CA certificate %q may not sign certificates: key usage lacks certSign", certPath, cert.Subject.CommonName)
	}
	key, err := parsePrivateKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", keyPath, err)
	}
	if !keyMatches(cert, key) {
		return fmt.Errorf("%s: private key does not match the CA certificate %q in %s", keyPath, cert.Subject.CommonName, certPath)
	}
	now := a.clock.Now()
	if now.After(cert.NotAfter) {
		return fmt.Errorf("%s: CA certificate %q expired at %s (now %s): every credential it issued is invalid; remove %s and %s to create a new CA",
			certPath, cert.Subject.CommonName, cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), certPath, keyPath)
	}
	if now.Add(RenewBefore).After(cert.NotAfter) {
		log.Warn("cluster CA expires soon; every credential it issued stops working then", "file", certPath, "notAfter", cert.NotAfter)
	}
	if info, err := os.Stat(keyPath); err == nil && info.Mode().Perm()&0o077 != 0 {
		log.Warn("CA key is readable by other users", "file", keyPath, "mode", info.Mode().Perm())
	}
	a.caCert, a.caPEM, a.caKey = cert, certPEM, key
	return nil
}

func (a *Authority) createCA(log *slog.Logger) error {
	key, err := newKey()
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	now := a.clock.Now()
	template := &x509.Certificate{
		// The timestamp tells CAs of different clusters (or generations) apart in
		// error messages and in the acceptable-CA list a TLS server sends.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s%d", caCommonPrefix, now.Unix())},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Only leaves below this CA: it never signs intermediate CAs.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	cert, certPEM, err := signCertificate(template, template, key.Public(), key)
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	keyPEM, err := encodeECKey(key)
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	// Key first: a crash between the two writes leaves ca.key without ca.crt, which
	// loadOrCreateCA reports instead of quietly making a second CA.
	if err := atomicfile.Write(a.caKeyFile(), keyPEM, keyFileMode); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	if err := atomicfile.Write(a.CAFile(), certPEM, certFileMode); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	log.Info("created cluster CA", "file", a.CAFile(), "subject", cert.Subject.CommonName, "notAfter", cert.NotAfter)
	a.caCert, a.caPEM, a.caKey = cert, certPEM, key
	return nil
}
