package controlclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/plinth/plinth/control/auth/authapi"
)

// pinnedCA verifies a server against a CA known only by the hash of its public key, as
// kubeadm's discovery with --discovery-token-ca-cert-hash does. The control service
// sends its CA after the serving certificate; the CA must hash to the pin and the
// serving certificate must chain to it for the server's name. Verification happens in
// the TLS handshake, so when it fails no HTTP request, and so no token, is ever sent.
type pinnedCA struct {
	pin  authapi.CAHash
	host string
	now  func() time.Time

	mu sync.Mutex
	ca *x509.Certificate
}

// tlsConfig returns a client configuration that verifies only through the pin.
func (p *pinnedCA) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard verification needs a trusted root, which is what join is
		// about to learn; VerifyConnection does the verification against the pin.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			ca, err := verifyPinned(cs.PeerCertificates, p.host, p.pin, p.now())
			if err != nil {
				return err
			}
			p.mu.Lock()
			p.ca = ca
			p.mu.Unlock()
			return nil
		},
	}
}

// verified returns the CA the last handshake was verified against.
func (p *pinnedCA) verified() *x509.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ca
}

// verifyPinned finds the CA with the pinned hash among the presented certificates and
// verifies the serving certificate (the first) against it for host.
func verifyPinned(presented []*x509.Certificate, host string, pin authapi.CAHash, now time.Time) (*x509.Certificate, error) {
	if len(presented) == 0 {
		return nil, errors.New("the server presented no certificate")
	}
	var ca *x509.Certificate
	intermediates := x509.NewCertPool()
	var offered []string
	for _, c := range presented[1:] {
		if ca == nil && pin.Matches(c) {
			ca = c
			continue
		}
		intermediates.AddCert(c)
		if c.IsCA {
			offered = append(offered, fmt.Sprintf("%q %s", c.Subject.CommonName, authapi.CACertHash(c)))
		}
	}
	if ca == nil {
		msg := fmt.Sprintf("the server at %s presented no CA certificate with the pinned public key hash %s", host, pin)
		if len(offered) > 0 {
			msg += " (it presented " + strings.Join(offered, ", ") + ")"
		} else {
			msg += " (it sent no CA certificate in its chain)"
		}
		return nil, errors.New(msg + "; check --ca-cert-hash against the cluster CA: the token was not sent")
	}
	if !ca.IsCA || !ca.BasicConstraintsValid {
		return nil, fmt.Errorf("the certificate %q with the pinned hash %s is not a CA certificate", ca.Subject.CommonName, pin)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := presented[0].Verify(x509.VerifyOptions{
		DNSName: host, Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("the serving certificate of %s does not verify against the pinned CA %q: %w", host, ca.Subject.CommonName, err)
	}
	return ca, nil
}
