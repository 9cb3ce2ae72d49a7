package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// FuzzNodeServingRequest: a serving request that passes parsing and the Node check
// names only what the Node reports.
func FuzzNodeServingRequest(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(authapi.NodeCertificateRequest{Request: csrPEM(f, key, nodeSubject("node-a"), "node-a"), Usage: authapi.UsageServing})
	for _, s := range [][]byte{good, []byte(`{"usage":"serving"}`), []byte(`{"request":"x","usage":"serving"}`)} {
		f.Add(s)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "node-a"}}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in authapi.NodeCertificateRequest
		if err := decodeJSON(body, &in, authapi.KindNodeCertificateRequest); err != nil {
			return
		}
		csr, _, err := ParseNodeServingCSR([]byte(in.Request))
		if err != nil {
			return
		}
		if len(csr.URIs)+len(csr.EmailAddresses) != 0 || len(csr.DNSNames)+len(csr.IPAddresses) == 0 {
			t.Fatalf("accepted serving CSR with SANs %v %v %v %v", csr.DNSNames, csr.IPAddresses, csr.URIs, csr.EmailAddresses)
		}
		if CheckServingNames(node, csr.DNSNames, csr.IPAddresses) != nil {
			return
		}
		for _, d := range csr.DNSNames {
			if d != "node-a" {
				t.Fatalf("accepted DNS name %q", d)
			}
		}
		for _, ip := range csr.IPAddresses {
			if ip.String() != "10.0.0.5" {
				t.Fatalf("accepted IP %s", ip)
			}
		}
	})
}
