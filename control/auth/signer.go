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
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/pki"
)

// ClientCertificateSigner signs client certificates for keys it never sees the private
// half of.
type ClientCertificateSigner interface {
	// SignClientCertificate returns a PEM certificate for pub with CommonName user and
	// Organizations groups, valid for validity (cut short at the CA's own expiry).
	SignClientCertificate(pub crypto.PublicKey, user string, groups []string, validity time.Duration) ([]byte, error)
	// SignServingCertificate returns a PEM server-authentication certificate for pub
	// with CommonName user, Organizations groups and the given SANs.
	SignServingCertificate(pub crypto.PublicKey, user string, groups, dnsNames []string, ips []net.IP, validity time.Duration) ([]byte, error)
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
// P-256 or P-384 ECDSA, Ed25519 or 2048-bit-or-larger RSA key, and no SANs. Requested
// extensions are ignored: the signer decides the usages.
func ParseNodeCSR(data []byte) (*x509.CertificateRequest, string, error) {
	csr, name, err := parseNodeCSR(data)
	if err != nil {
		return nil, "", err
	}
	if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, "", errors.New("request: subject alternative names are not allowed in a node client certificate")
	}
	return csr, name, nil
}

// ParseNodeServingCSR is ParseNodeCSR for a node's serving certificate: it must carry
// at least one DNS name or IP address SAN, and no e-mail or URI SANs. Whether the
// names belong to the node is the caller's check (CheckServingNames).
func ParseNodeServingCSR(data []byte) (*x509.CertificateRequest, string, error) {
	csr, name, err := parseNodeCSR(data)
	if err != nil {
		return nil, "", err
	}
	if len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return nil, "", errors.New("request: e-mail and URI subject alternative names are not allowed in a node serving certificate")
	}
	if len(csr.DNSNames)+len(csr.IPAddresses) == 0 {
		return nil, "", errors.New("request: a node serving certificate needs at least one DNS name or IP address")
	}
	return csr, name, nil
}

// CheckServingNames refuses SANs the Node does not report: IP addresses must be among
// its InternalIP or ExternalIP addresses, DNS names among its Hostname, InternalDNS or
// ExternalDNS addresses or its name.
func CheckServingNames(node *corev1.Node, dnsNames []string, ips []net.IP) error {
	knownDNS := map[string]bool{node.Name: true}
	var knownIPs []net.IP
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			knownDNS[a.Address] = true
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				knownIPs = append(knownIPs, ip)
			}
		}
	}
	for _, d := range dnsNames {
		if !knownDNS[d] {
			return fmt.Errorf("request: DNS name %q is not among node %s's names in status.addresses", d, node.Name)
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(knownIPs, ip.Equal) {
			return fmt.Errorf("request: IP address %s is not among node %s's InternalIP or ExternalIP addresses", ip, node.Name)
		}
	}
	return nil
}

func parseNodeCSR(data []byte) (*x509.CertificateRequest, string, error) {
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
