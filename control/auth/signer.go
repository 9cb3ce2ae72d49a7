package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
