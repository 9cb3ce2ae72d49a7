package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/plinth/plinth/internal/atomicfile"
)

// ensureServingCert keeps serving.crt/serving.key usable for hosts: it reuses them when
// they are sound and re-issues both (with a fresh key) otherwise. The serving
// certificate is derived material, so an unreadable or foreign one is replaced rather
// than reported: the CA can always make another.
func (a *Authority) ensureServingCert(hosts servingHosts, log *slog.Logger) error {
	certPath, keyPath := a.ServingCertFile(), a.ServingKeyFile()
	pair, reason := a.servingReissueReason(hosts)
	if reason == "" {
		a.serving = pair
		return nil
	}

	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: servingCommonName},
		DNSNames:    hosts.dnsNames,
		IPAddresses: hosts.ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	certPEM, keyPEM, err := a.issueLeaf(template, LeafValidity)
	if err != nil {
		return fmt.Errorf("issue serving certificate %s: %w", certPath, err)
	}
	// Key first: after a crash between the writes the old certificate no longer matches
	// the key, which the next start detects and repairs.
	if err := atomicfile.Write(keyPath, keyPEM, keyFileMode); err != nil {
		return fmt.Errorf("issue serving certificate: %w", err)
	}
	if err := atomicfile.Write(certPath, certPEM, certFileMode); err != nil {
		return fmt.Errorf("issue serving certificate: %w", err)
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("issue serving certificate %s: load the pair just written: %w", certPath, err)
	}
	leaf, err := leafOf(&pair)
	if err != nil {
		return fmt.Errorf("issue serving certificate %s: %w", certPath, err)
	}
	a.serving = pair
	log.Info("issued serving certificate", "file", certPath, "reason", reason,
		"dnsNames", hosts.dnsNames, "ips", hosts.ips, "notAfter", leaf.NotAfter)
	return nil
}

// servingReissueReason loads the serving pair and returns it with an empty reason when
// it can be used as is, or a reason (for the log) why it must be re-issued.
func (a *Authority) servingReissueReason(hosts servingHosts) (tls.Certificate, string) {
	certPath, keyPath := a.ServingCertFile(), a.ServingKeyFile()
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, certPath + " does not exist"
	}
	if err != nil {
		return tls.Certificate{}, err.Error()
	}
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, keyPath + " does not exist"
	}
	if err != nil {
		return tls.Certificate{}, err.Error()
	}
	// X509KeyPair also checks that the key belongs to the certificate.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Sprintf("%s and %s are not a usable pair: %v", certPath, keyPath, err)
	}
	cert, err := leafOf(&pair)
	if err != nil {
		return tls.Certificate{}, fmt.Sprintf("%s: %v", certPath, err)
	}
	if err := cert.CheckSignatureFrom(a.caCert); err != nil {
		return tls.Certificate{}, fmt.Sprintf("%s is not signed by the cluster CA %q: %v", certPath, a.caCert.Subject.CommonName, err)
	}
	if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return tls.Certificate{}, certPath + " lacks extended key usage serverAuth"
	}
	if missing := hosts.missingFrom(cert.DNSNames, cert.IPAddresses); len(missing) > 0 {
		return tls.Certificate{}, fmt.Sprintf("%s does not cover %s", certPath, strings.Join(missing, ", "))
	}
	now := a.clock.Now()
	if now.Before(cert.NotBefore) {
		return tls.Certificate{}, fmt.Sprintf("%s is not valid before %s", certPath, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	if !now.Add(RenewBefore).Before(cert.NotAfter) {
		return tls.Certificate{}, fmt.Sprintf("%s expires at %s, within %v", certPath, cert.NotAfter.UTC().Format(time.RFC3339), RenewBefore)
	}
	return pair, ""
}

// leafOf returns the parsed leaf of pair. tls.X509KeyPair fills Leaf in unless the
// x509keypairleaf=0 GODEBUG setting is in force; then it is parsed here, and stored so
// the TLS server does not parse it on every handshake.
func leafOf(pair *tls.Certificate) (*x509.Certificate, error) {
	if pair.Leaf == nil {
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, err
		}
		pair.Leaf = leaf
	}
	return pair.Leaf, nil
}
