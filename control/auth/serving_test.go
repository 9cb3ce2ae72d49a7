package auth

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
)

// servingCSR is a serving request for node name with the given SANs.
func servingCSR(t *testing.T, name string, dns []string, ips []net.IP) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: nodeSubject(name), DNSNames: dns, IPAddresses: ips,
	}, ecKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func TestServingCertificates(t *testing.T) {
	ca := newCA(t)
	nodes := map[string]*corev1.Node{
		"node-1": {ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "node-1"},
		}}},
	}
	h, err := NewHandler(HandlerConfig{
		Authenticators: []apiserver.Authenticator{headerUser{}}, Authorizer: Authorizer{},
		Tokens: NewTokenStore(newEtcdStore(t), nil, nil), Signer: ca, NodeCertValidity: time.Hour,
		Nodes: func(_ context.Context, name string) (*corev1.Node, error) {
			if n, ok := nodes[name]; ok {
				return n, nil
			}
			return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(Mount(http.NotFoundHandler(), h))
	t.Cleanup(srv.Close)
	env := handlerEnv{url: srv.URL, client: srv.Client()}
	node1 := "system:node:node-1|system:nodes"
	ip := net.ParseIP("10.0.0.5")
	for _, c := range []struct {
		name, user string
		csr        string
		code       int
		want       string
	}{
		{"own names", node1, servingCSR(t, "node-1", []string{"node-1"}, []net.IP{ip}), http.StatusCreated, ""},
		{"an administrator", "admin|system:masters", servingCSR(t, "node-1", nil, []net.IP{ip}), http.StatusCreated, ""},
		{"another node's", "system:node:node-2|system:nodes", servingCSR(t, "node-1", nil, []net.IP{ip}), http.StatusForbidden, "its own"},
		{"a bootstrapper", "system:bootstrap:abcdef|system:bootstrappers", servingCSR(t, "node-1", nil, []net.IP{ip}), http.StatusForbidden, ""},
		{"a foreign IP", node1, servingCSR(t, "node-1", nil, []net.IP{net.ParseIP("10.0.0.6")}), http.StatusForbidden, "10.0.0.6"},
		{"a foreign DNS name", node1, servingCSR(t, "node-1", []string{"evil.example.com"}, nil), http.StatusForbidden, "evil.example.com"},
		{"no names", node1, servingCSR(t, "node-1", nil, nil), http.StatusBadRequest, "at least one"},
		{"an unknown node", "admin|system:masters", servingCSR(t, "node-3", nil, []net.IP{ip}), http.StatusNotFound, ""},
	} {
		code, body := env.do(t, c.user, http.MethodPost, authapi.NodeCertificateRequestsPath,
			authapi.NodeCertificateRequest{Request: c.csr, Usage: authapi.UsageServing})
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want %d containing %q", c.name, code, body, c.code, c.want)
			continue
		}
		if code != http.StatusCreated {
			continue
		}
		var out authapi.NodeCertificateRequest
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode([]byte(out.Certificate))
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(ca.CACertificate())
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: the serving certificate does not verify for server auth: %v", c.name, err)
		}
		if err := cert.VerifyHostname("10.0.0.5"); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// A serving request cannot pass as a client request: SANs are refused there.
	code, body := env.do(t, node1, http.MethodPost, authapi.NodeCertificateRequestsPath,
		authapi.NodeCertificateRequest{Request: servingCSR(t, "node-1", nil, []net.IP{ip})})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "subject alternative names") {
		t.Errorf("client request with SANs: %d %s", code, body)
	}
	code, body = env.do(t, node1, http.MethodPost, authapi.NodeCertificateRequestsPath,
		authapi.NodeCertificateRequest{Request: servingCSR(t, "node-1", nil, []net.IP{ip}), Usage: "peer"})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "neither client nor serving") {
		t.Errorf("unknown usage: %d %s", code, body)
	}
}
