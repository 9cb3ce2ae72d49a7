package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

const (
	// CAValidity is how long a newly created cluster CA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is the default lifetime of serving and client certificates.
	LeafValidity = 365 * 24 * time.Hour
	// RenewBefore is how close to expiry the serving certificate is re-issued.
	RenewBefore = 30 * 24 * time.Hour

	// clockSkew backdates NotBefore so a peer whose clock runs a little behind ours
	// does not reject a certificate issued a moment ago.
	clockSkew = 5 * time.Minute

	pemTypeCertificate = "CERTIFICATE"
	pemTypeECKey       = "EC PRIVATE KEY"
)

// newKey returns a fresh ECDSA P-256 key: small, fast, and accepted by every TLS stack
// kubectl and client-go use.
func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ECDSA P-256 key: %w", err)
	}
	return key, nil
}

// newSerial returns a random, positive 128-bit serial number; random serials make
// certificates unpredictable and keep serials unique without a counter on disk.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		serial, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("generate certificate serial number: %w", err)
		}
		if serial.Sign() > 0 {
			return serial, nil
		}
	}
}

// signCertificate fills in serial and public key, signs template with parent/parentKey
// (template itself and key for a self-signed certificate) and returns the parsed
// certificate and its PEM encoding.
func signCertificate(template, parent *x509.Certificate, pub crypto.PublicKey, parentKey crypto.Signer) (*x509.Certificate, []byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse freshly signed certificate for %q: %w", template.Subject.CommonName, err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: pemTypeCertificate, Bytes: der}), nil
}

func encodeECKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode ECDSA private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemTypeECKey, Bytes: der}), nil
}

// parseCertificatePEM returns the first certificate in data.
func parseCertificatePEM(data []byte) (*x509.Certificate, error) {
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM block of type CERTIFICATE found")
		}
		if block.Type != pemTypeCertificate {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		return cert, nil
	}
}

// parsePrivateKeyPEM returns the first private key in data. It accepts SEC1 ("EC
// PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY") and PKCS#8 ("PRIVATE KEY"), so an operator
// may bring a CA made by other tools.
func parsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM block of type EC PRIVATE KEY, RSA PRIVATE KEY or PRIVATE KEY found")
		}
		switch block.Type {
		case pemTypeECKey:
			key, err := x509.ParseECPrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse EC PRIVATE KEY: %w", err)
			}
			return key, nil
		case "RSA PRIVATE KEY":
			key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse RSA PRIVATE KEY: %w", err)
			}
			return key, nil
		case "PRIVATE KEY":
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse PRIVATE KEY (PKCS#8): %w", err)
			}
			signer, ok := key.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("PRIVATE KEY (PKCS#8) holds a %T, which cannot sign", key)
			}
			return signer, nil
		}
	}
}

// keyMatches reports whether key is the private half of cert's public key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// Compile-time checks that the key types we parse can be compared by keyMatches.
var (
	_ interface{ Equal(crypto.PublicKey) bool } = (*ecdsa.PublicKey)(nil)
	_ interface{ Equal(crypto.PublicKey) bool } = (*rsa.PublicKey)(nil)
)
