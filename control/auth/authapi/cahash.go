package authapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
)

// caHashPrefix is the only hash kubeadm and Plinth accept.
const caHashPrefix = "sha256:"

// CACertHash returns "sha256:<hex>" of the certificate's SubjectPublicKeyInfo, the
// value `plinthctl join --ca-cert-hash` expects (kubeadm's discovery-token-ca-cert-hash).
// Hashing the public key rather than the whole certificate keeps the pin valid when
// the CA certificate is re-issued with the same key.
func CACertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return caHashPrefix + hex.EncodeToString(sum[:])
}

// CAHash is a parsed --ca-cert-hash.
type CAHash [sha256.Size]byte

// ParseCACertHash reads "sha256:<64 hex digits>" (hex in either case).
func ParseCACertHash(s string) (CAHash, error) {
	var h CAHash
	digits, ok := strings.CutPrefix(s, caHashPrefix)
	if !ok {
		return h, fmt.Errorf("CA certificate hash %q: want sha256:<%d hex digits> (the only supported hash)", printable(s), 2*sha256.Size)
	}
	if len(digits) != 2*sha256.Size {
		return h, fmt.Errorf("CA certificate hash %q: want %d hex digits after sha256:, found %d", printable(s), 2*sha256.Size, len(digits))
	}
	if _, err := hex.Decode(h[:], []byte(digits)); err != nil {
		return h, fmt.Errorf("CA certificate hash %q: %v", printable(s), err)
	}
	return h, nil
}

// Matches reports whether cert's public key has hash h.
func (h CAHash) Matches(cert *x509.Certificate) bool {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return subtle.ConstantTimeCompare(sum[:], h[:]) == 1
}

// String returns the hash as ParseCACertHash reads it.
func (h CAHash) String() string { return caHashPrefix + hex.EncodeToString(h[:]) }
