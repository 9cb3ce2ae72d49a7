package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"testing"

	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/pki"
)

// FuzzNodeCertificateRequest feeds request bodies through what the signing endpoint does
// before it signs: strict JSON decoding, then CSR parsing and checks. Whatever passes
// must name a valid node and carry exactly the node's subject.
func FuzzNodeCertificateRequest(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(authapi.NodeCertificateRequest{Request: csrPEM(f, key, nodeSubject("node-a"))})
	other, _ := json.Marshal(authapi.NodeCertificateRequest{Request: csrPEM(f, key, nodeSubject("a.b-c"))})
	for _, s := range [][]byte{good, other, []byte(`{}`), []byte(`{"request":""}`), []byte(`{"request":1}`),
		[]byte(`{"kind":"NodeCertificateRequest","apiVersion":"plinth.dev/v1","request":"-----BEGIN CERTIFICATE REQUEST-----\nAA==\n-----END CERTIFICATE REQUEST-----\n"}`),
		[]byte(`{"request":"x"} {}`), []byte(`null`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in authapi.NodeCertificateRequest
		if err := decodeJSON(body, &in, authapi.KindNodeCertificateRequest); err != nil {
			return
		}
		csr, name, err := ParseNodeCSR([]byte(in.Request))
		if err != nil {
			return
		}
		if _, err := pki.NodeUser(name); err != nil {
			t.Fatalf("accepted invalid node name %q: %v", name, err)
		}
		if csr.Subject.CommonName != authapi.NodeUserPrefix+name || len(csr.Subject.Organization) != 1 ||
			csr.Subject.Organization[0] != authapi.NodesGroup || len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.URIs)+len(csr.EmailAddresses) != 0 {
			t.Fatalf("accepted CSR with subject %v and SANs", csr.Subject)
		}
		if err := csr.CheckSignature(); err != nil {
			t.Fatalf("accepted CSR with a bad signature: %v", err)
		}
	})
}
