package controlclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/plinth/plinth/control/auth/authapi"
)

// requestTimeout bounds one certificate request.
const requestTimeout = 30 * time.Second

// newKeyAndCSR generates the node's key (ECDSA P-256, which never leaves the node) and
// a CSR for system:node:<name> in system:nodes.
func newKeyAndCSR(name string) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate node key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: authapi.NodeUserPrefix + name, Organization: []string{authapi.NodesGroup}},
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate signing request: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// requestCertificate posts csr to the control service at server and returns the signed
// certificate (PEM); usage is authapi.UsageServing for a serving certificate, else
// empty. authorize adds credentials to the request (a bootstrap token), or
// does nothing when the client's TLS configuration carries a certificate.
func requestCertificate(ctx context.Context, client *http.Client, server string, csr []byte, usage string, authorize func(*http.Request)) ([]byte, error) {
	body, err := json.Marshal(authapi.NodeCertificateRequest{
		TypeMeta: authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindNodeCertificateRequest},
		Request:  string(csr), Usage: usage,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	url := strings.TrimSuffix(server, "/") + authapi.NodeCertificateRequestsPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("certificate request to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if authorize != nil {
		authorize(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("certificate request to %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("certificate request to %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusCreated {
		var st authapi.Status
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			return nil, fmt.Errorf("certificate request to %s: %s (%s)", url, st.Message, resp.Status)
		}
		return nil, fmt.Errorf("certificate request to %s: %s", url, resp.Status)
	}
	var out authapi.NodeCertificateRequest
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("certificate request to %s: decoding the answer: %w", url, err)
	}
	return []byte(out.Certificate), nil
}

// checkIssued verifies that certPEM is what was asked for: for key, for node name,
// in system:nodes, chaining to ca for client authentication. It returns the parsed
// certificate and the combined certificate-and-key PEM to store.
func checkIssued(certPEM []byte, key *ecdsa.PrivateKey, name string, ca *x509.Certificate, now time.Time) (*x509.Certificate, []byte, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("the control service answered without a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the issued certificate does not parse: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("the issued certificate is for another key")
	}
	if cert.Subject.CommonName != authapi.NodeUserPrefix+name || !slices.Equal(cert.Subject.Organization, []string{authapi.NodesGroup}) {
		return nil, nil, fmt.Errorf("the issued certificate is for %q in %q, not %s%s in %s",
			cert.Subject.CommonName, cert.Subject.Organization, authapi.NodeUserPrefix, name, authapi.NodesGroup)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, nil, fmt.Errorf("the issued certificate does not verify against the cluster CA %q: %w", ca.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode node key: %w", err)
	}
	combined := append(pem.EncodeToMemory(block), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if _, err := tls.X509KeyPair(combined, combined); err != nil {
		return nil, nil, fmt.Errorf("the certificate and key do not form a usable pair: %w", err)
	}
	return cert, combined, nil
}
