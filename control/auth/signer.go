package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/pki"
)

// ClientCertificateSigner signs client certificates for keys it never sees the private
// half of.
type ClientCertificateSigner interface {
	// SignClientCertificate returns a PEM certificate for pub with CommonName user and
	// Organizations groups, valid for validity (cut short at the CA's own expiry).
	SignClientCertificate(pub crypto.PublicKey, user string, groups []string, validity time.Duration) ([]byte, error)
	// CAPEM returns the CA certificate the signed certificates chain to.
	CAPEM() []byte
}

// FileCA signs with the cluster CA kept by control/pki (ca.crt and ca.key in its
// directory). control/pki.Authority only issues certificates for keys it generates
// itself; a joining node must keep its key, so the CSR path signs here.
type FileCA struct {
	cert  *x509.Certificate
	pem   []byte
	key   crypto.Signer
	clock clock.PassiveClock
}

// LoadFileCA reads ca.crt and ca.key from dir (control/pki's layout). A nil clock
// means the real one.
func LoadFileCA(dir string, clk clock.PassiveClock) (*FileCA, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("node certificate signer: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("node certificate signer: %w", err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("node certificate signer: %s: no PEM CERTIFICATE block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("node certificate signer: %s: %w", certFile, err)
	}
	key, err := parseSignerPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node certificate signer: %s: %w", keyFile, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("node certificate signer: %s does not match the CA certificate in %s", keyFile, certFile)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("node certificate signer: %s is not a CA certificate", certFile)
	}
	return &FileCA{cert: cert, pem: pem.EncodeToMemory(block), key: key, clock: clk}, nil
}

func parseSignerPEM(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM block of type EC PRIVATE KEY, RSA PRIVATE KEY or PRIVATE KEY found")
		}
		var key any
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%s holds a %T, which cannot sign", block.Type, key)
		}
		return signer, nil
	}
}

// CAPEM implements ClientCertificateSigner.
func (c *FileCA) CAPEM() []byte { return slices.Clone(c.pem) }

// CACertificate returns the parsed CA certificate.
func (c *FileCA) CACertificate() *x509.Certificate { return c.cert }

// maxBackdate is how far NotBefore is set back, so a peer whose clock runs a little
// behind accepts a certificate issued a moment ago. Short-lived certificates (tests) are
// backdated by a twentieth of their lifetime instead, so that renewing at 70-90% of
// NotAfter-NotBefore still happens before expiry.
const maxBackdate = 5 * time.Minute

// SignClientCertificate implements ClientCertificateSigner.
func (c *FileCA) SignClientCertificate(pub crypto.PublicKey, user string, groups []string, validity time.Duration) ([]byte, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("sign client certificate for %s: validity %v must be positive", user, validity)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("sign client certificate for %s: serial number: %w", user, err)
	}
	now := c.clock.Now()
	backdate := min(maxBackdate, validity/20)
	usage := x509.KeyUsageDigitalSignature
	if _, ok := pub.(*rsa.PublicKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	template := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)), // never zero
		Subject:               pkix.Name{CommonName: user, Organization: slices.Clone(groups)},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	if template.NotAfter.After(c.cert.NotAfter) {
		template.NotAfter = c.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, template, c.cert, pub, c.key)
	if err != nil {
		return nil, fmt.Errorf("sign client certificate for %s: %w", user, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// oidCommonName and oidOrganization are the only subject attributes a node CSR may carry.
var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
)

// ParseNodeCSR reads a node's certificate signing request and returns it with the node
// name it asks for. It accepts exactly one PEM CERTIFICATE REQUEST, self-signed by its
// key, for subject CN=system:node:<name>, O=system:nodes and nothing else, with a
// P-256 or P-384 ECDSA, Ed25519 or 2048-bit-or-larger RSA key. Requested extensions are
// ignored: the signer decides the usages.
func ParseNodeCSR(data []byte) (*x509.CertificateRequest, string, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, "", errors.New("request: want one PEM block of type CERTIFICATE REQUEST")
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return nil, "", errors.New("request: unexpected data after the CERTIFICATE REQUEST block")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, "", fmt.Errorf("request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, "", fmt.Errorf("request: the CSR is not signed by its own key: %w", err)
	}
	name, ok := strings.CutPrefix(csr.Subject.CommonName, authapi.NodeUserPrefix)
	if !ok {
		return nil, "", fmt.Errorf("request: subject common name %q must be %s<node name>", csr.Subject.CommonName, authapi.NodeUserPrefix)
	}
	if _, err := pki.NodeUser(name); err != nil {
		return nil, "", fmt.Errorf("request: subject common name: %w", err)
	}
	if !slices.Equal(csr.Subject.Organization, []string{authapi.NodesGroup}) {
		return nil, "", fmt.Errorf("request: subject organizations %q must be exactly [%s]", csr.Subject.Organization, authapi.NodesGroup)
	}
	for _, n := range csr.Subject.Names {
		if !n.Type.Equal(oidCommonName) && !n.Type.Equal(oidOrganization) {
			return nil, "", fmt.Errorf("request: subject attribute %v is not allowed: only CN and O", n.Type)
		}
	}
	if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, "", errors.New("request: subject alternative names are not allowed in a node client certificate")
	}
	if err := checkPublicKey(csr.PublicKey); err != nil {
		return nil, "", fmt.Errorf("request: %w", err)
	}
	return csr, name, nil
}

func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("ECDSA curve %s is not accepted: use P-256 or P-384", k.Curve.Params().Name)
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is too small: use 2048 bits or more", k.N.BitLen())
		}
	case ed25519.PublicKey:
	default:
		return fmt.Errorf("public key type %T is not accepted: use ECDSA P-256", pub)
	}
	return nil
}
