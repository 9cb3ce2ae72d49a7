package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/pki"
)

// headerUser authenticates tests' requests from an X-Test-User header ("name|group,group"),
// and "Authorization: Bearer test-admin" as an administrator.
type headerUser struct{}

func (headerUser) Authenticate(req *http.Request) (apiserver.User, bool, error) {
	v := req.Header.Get("X-Test-User")
	if req.Header.Get("Authorization") == "Bearer test-admin" {
		v = "plinth-admin|system:masters"
	}
	if v == "" {
		return apiserver.User{}, false, nil
	}
	name, groups, _ := strings.Cut(v, "|")
	return apiserver.User{Name: name, Groups: strings.Split(groups, ",")}, true, nil
}

func newCA(t *testing.T) *pki.Authority {
	t.Helper()
	ca, err := pki.LoadOrCreate(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func csrPEM(t testing.TB, key crypto.Signer, subject pkix.Name, dnsNames ...string) string {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

func nodeSubject(name string) pkix.Name {
	return pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type handlerEnv struct {
	url    string
	client *http.Client
	caPEM  []byte
	ca     *pki.Authority
	tokens *TokenStore
}

func newHandlerEnv(t *testing.T) handlerEnv {
	t.Helper()
	ca := newCA(t)
	tokens := NewTokenStore(newEtcdStore(t), nil, nil)
	h, err := NewHandler(HandlerConfig{
		Authenticators: []apiserver.Authenticator{headerUser{}}, Authorizer: Authorizer{},
		Tokens: tokens, Signer: ca, NodeCertValidity: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "api", http.StatusTeapot) })
	// TLS, because clientcmd drops credentials from kubeconfigs of plain-HTTP servers.
	srv := httptest.NewTLSServer(Mount(api, h))
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return handlerEnv{url: srv.URL, client: srv.Client(), caPEM: caPEM, ca: ca, tokens: tokens}
}

func (e handlerEnv) do(t *testing.T, user, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

const (
	adminUser   = "plinth-admin|system:masters"
	nodeAUser   = "system:node:node-a|system:nodes"
	bootUser    = "system:bootstrap:abcdef|system:bootstrappers"
	strangeUser = "jane|"
)

func TestHandlerTokens(t *testing.T) {
	e := newHandlerEnv(t)
	code, body := e.do(t, adminUser, "POST", authapi.BootstrapTokensPath, authapi.BootstrapTokenRequest{TTLSeconds: 3600, Description: "d"})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var created authapi.BootstrapToken
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	tok, err := authapi.ParseToken(created.Token)
	if err != nil || tok.ID != created.ID || created.Kind != authapi.KindBootstrapToken {
		t.Fatalf("created %+v: %v", created, err)
	}
	if err := e.tokens.Check(context.Background(), tok); err != nil {
		t.Fatalf("created token does not check: %v", err)
	}

	code, body = e.do(t, adminUser, "GET", authapi.BootstrapTokensPath, nil)
	var list authapi.BootstrapTokenList
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list.Items) != 1 || list.Items[0].ID != tok.ID {
		t.Fatalf("list: %d %s", code, body)
	}
	if bytes.Contains(body, []byte(tok.Secret)) {
		t.Fatal("the list shows the secret")
	}

	for _, c := range []struct {
		user, method, path string
		body               any
		code               int
		msg                string
	}{
		{"", "GET", authapi.BootstrapTokensPath, nil, 401, "no credentials"},
		{nodeAUser, "GET", authapi.BootstrapTokensPath, nil, 403, "user system:node:node-a may not list bootstraptokens.plinth.dev"},
		{bootUser, "POST", authapi.BootstrapTokensPath, authapi.BootstrapTokenRequest{}, 403, "may only request a node certificate"},
		{strangeUser, "DELETE", authapi.BootstrapTokensPath + "/" + tok.ID, nil, 403, "jane"},
		{adminUser, "POST", authapi.BootstrapTokensPath, authapi.BootstrapTokenRequest{TTLSeconds: -1}, 400, "ttlSeconds"},
		{adminUser, "POST", authapi.BootstrapTokensPath, map[string]any{"ttl": "24h"}, 400, `unknown field`},
		{adminUser, "POST", authapi.BootstrapTokensPath, authapi.BootstrapTokenRequest{TypeMeta: authapi.TypeMeta{Kind: "Pod"}}, 400, "want plinth.dev/v1 BootstrapTokenRequest"},
		{adminUser, "DELETE", authapi.BootstrapTokensPath + "/NOPE", nil, 400, "6 characters"},
		{adminUser, "DELETE", authapi.BootstrapTokensPath + "/zzzzzz", nil, 404, "zzzzzz"},
		{adminUser, "PUT", authapi.BootstrapTokensPath + "/" + tok.ID, nil, 405, "update"},
		{adminUser, "GET", authapi.PathPrefix + "widgets", nil, 404, "could not find"},
	} {
		code, body := e.do(t, c.user, c.method, c.path, c.body)
		if code != c.code || !strings.Contains(string(body), c.msg) {
			t.Errorf("%s %s as %q: %d %s, want %d mentioning %q", c.method, c.path, c.user, code, body, c.code, c.msg)
		}
	}

	code, body = e.do(t, adminUser, "DELETE", authapi.BootstrapTokensPath+"/"+tok.ID, nil)
	if code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	if err := e.tokens.Check(context.Background(), tok); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("deleted token checks: %v", err)
	}

	// Other paths go to the API server.
	if code, _ := e.do(t, adminUser, "GET", "/api/v1/nodes", nil); code != http.StatusTeapot {
		t.Fatalf("/api/v1/nodes answered %d, not by the API server", code)
	}
}

func TestHandlerSignsNodeCertificates(t *testing.T) {
	e := newHandlerEnv(t)
	key := ecKey(t)
	sign := func(user string, req string) (int, authapi.NodeCertificateRequest, string) {
		t.Helper()
		code, body := e.do(t, user, "POST", authapi.NodeCertificateRequestsPath, authapi.NodeCertificateRequest{Request: req})
		var out authapi.NodeCertificateRequest
		_ = json.Unmarshal(body, &out)
		return code, out, string(body)
	}

	code, out, body := sign(bootUser, csrPEM(t, key, nodeSubject("node-a")))
	if code != http.StatusCreated {
		t.Fatalf("bootstrapper sign: %d %s", code, body)
	}
	cert := parseCertPEM(t, out.Certificate)
	if cert.Subject.CommonName != "system:node:node-a" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("signed subject %v", cert.Subject)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Fatal("the signed certificate is not for the requester's key")
	}
	if life := cert.NotAfter.Sub(time.Now()); life > time.Hour || life < 59*time.Minute {
		t.Fatalf("certificate valid for %v, want the configured hour", life)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA {
		t.Fatalf("usages %v, CA %v", cert.ExtKeyUsage, cert.IsCA)
	}
	if out.CACertificate != string(e.ca.CAPEM()) {
		t.Fatal("the answer does not carry the CA")
	}
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.CACertificate())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("signed certificate does not verify against the CA: %v", err)
	}

	// A node renews its own certificate, but not another node's.
	if code, _, body := sign(nodeAUser, csrPEM(t, ecKey(t), nodeSubject("node-a"))); code != http.StatusCreated {
		t.Fatalf("node renewal: %d %s", code, body)
	}
	if code, _, body := sign(nodeAUser, csrPEM(t, ecKey(t), nodeSubject("node-b"))); code != http.StatusForbidden || !strings.Contains(body, "may only renew its own certificate, not request one for node node-b") {
		t.Fatalf("node A asking for node B: %d %s", code, body)
	}
	if code, _, body := sign(strangeUser, csrPEM(t, ecKey(t), nodeSubject("node-a"))); code != http.StatusForbidden {
		t.Fatalf("stranger: %d %s", code, body)
	}
	if code, _, body := sign("", csrPEM(t, ecKey(t), nodeSubject("node-a"))); code != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d %s", code, body)
	}
	if code, _, body := sign(bootUser, "garbage"); code != http.StatusBadRequest || !strings.Contains(body, "CERTIFICATE REQUEST") {
		t.Fatalf("garbage CSR: %d %s", code, body)
	}
	code, body2 := e.do(t, bootUser, "POST", authapi.NodeCertificateRequestsPath, authapi.NodeCertificateRequest{Request: csrPEM(t, key, nodeSubject("node-a")), Certificate: "x"})
	if code != http.StatusBadRequest || !strings.Contains(string(body2), "set by the server") {
		t.Fatalf("request with a certificate: %d %s", code, body2)
	}
	code, body2 = e.do(t, bootUser, "POST", authapi.NodeCertificateRequestsPath, strings.Repeat("x", maxRequestBytes+1))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("huge body: %d %s", code, body2)
	}
}

func parseCertPEM(t *testing.T, s string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		t.Fatalf("no PEM in %q", s)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestParseNodeCSR(t *testing.T) {
	key := ecKey(t)
	smallRSA, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := csrPEM(t, key, nodeSubject("node-a.example"))
	if _, name, err := ParseNodeCSR([]byte(good)); err != nil || name != "node-a.example" {
		t.Fatalf("good CSR: %q, %v", name, err)
	}
	// Tamper with the signed bytes: the self-signature no longer verifies.
	block, _ := pem.Decode([]byte(good))
	tampered := slices.Clone(block.Bytes)
	idx := bytes.Index(tampered, []byte("node-a.example"))
	tampered[idx] = 'm'
	for _, c := range []struct {
		name string
		pem  string
		want string
	}{
		{"not PEM", "hello", "CERTIFICATE REQUEST"},
		{"a certificate", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})), "CERTIFICATE REQUEST"},
		{"two requests", good + good, "unexpected data"},
		{"tampered", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})), "not signed by its own key"},
		{"not a node", csrPEM(t, key, pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}), "must be system:node:"},
		{"masters group", csrPEM(t, key, pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes", "system:masters"}}), "exactly [system:nodes]"},
		{"no group", csrPEM(t, key, pkix.Name{CommonName: "system:node:a"}), "exactly [system:nodes]"},
		{"bad node name", csrPEM(t, key, nodeSubject("Node_A")), "invalid"},
		{"extra subject field", csrPEM(t, key, pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}, Country: []string{"DE"}}), "only CN and O"},
		{"SANs", csrPEM(t, key, nodeSubject("a"), "evil.example"), "alternative names"},
		{"small RSA", csrPEM(t, smallRSA, nodeSubject("a")), "1024 bits"},
		{"P-224", csrPEM(t, p224, nodeSubject("a")), "P-224"},
	} {
		if _, _, err := ParseNodeCSR([]byte(c.pem)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

// TestNodeCertificateSigning checks the signer the handler uses (the cluster CA) on
// the lifetimes node certificates get.
func TestNodeCertificateSigning(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	ca, err := pki.LoadOrCreate(t.TempDir(), pki.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	key := ecKey(t)
	for _, c := range []struct {
		validity, backdate time.Duration
	}{{time.Hour, 3 * time.Minute}, {20 * time.Second, time.Second}, {365 * 24 * time.Hour, 5 * time.Minute}} {
		certPEM, err := ca.SignClientCertificate(key.Public(), "system:node:a", []string{"system:nodes"}, c.validity)
		if err != nil {
			t.Fatal(err)
		}
		cert := parseCertPEM(t, string(certPEM))
		if !cert.NotAfter.Equal(clk.Now().Add(c.validity).Truncate(time.Second)) || !cert.NotBefore.Equal(clk.Now().Add(-c.backdate).Truncate(time.Second)) {
			t.Errorf("validity %v: certificate from %s to %s (now %s), want backdated by %v", c.validity, cert.NotBefore, cert.NotAfter, clk.Now(), c.backdate)
		}
	}
	// Never beyond the CA.
	certPEM, err := ca.SignClientCertificate(key.Public(), "system:node:a", []string{"system:nodes"}, 100*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := parseCertPEM(t, string(certPEM)).NotAfter; !got.Equal(ca.CACertificate().NotAfter) {
		t.Fatalf("certificate ends %s, CA ends %s", got, ca.CACertificate().NotAfter)
	}
}

func TestCertificateAuthenticatorChecksExpiry(t *testing.T) {
	ca := newCA(t)
	key := ecKey(t)
	certPEM, err := ca.SignClientCertificate(key.Public(), "system:node:a", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseCertPEM(t, string(certPEM))
	req := httptest.NewRequest("GET", "/api/v1/nodes", nil)
	req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert, ca.CACertificate()}}}

	clk := clocktesting.NewFakeClock(time.Now())
	a := CertificateAuthenticator{Clock: clk}
	u, ok, err := a.Authenticate(req)
	if !ok || err != nil || u.Name != "system:node:a" || !u.InGroup("system:nodes") {
		t.Fatalf("valid certificate: %+v %v %v", u, ok, err)
	}
	clk.Step(time.Hour + time.Second)
	if _, ok, err := a.Authenticate(req); ok || err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired certificate on a live connection: ok %v, err %v", ok, err)
	}
	if _, ok, err := a.Authenticate(httptest.NewRequest("GET", "/", nil)); ok || err != nil {
		t.Fatalf("request without a certificate: ok %v, err %v; want not recognised", ok, err)
	}
}

type fixedTokens struct{ err error }

func (f fixedTokens) Check(context.Context, authapi.Token) error { return f.err }

func TestTokenAuthenticator(t *testing.T) {
	req := func(h string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		return r
	}
	const good = "Bearer abcdef.0123456789abcdef"
	u, ok, err := TokenAuthenticator{Tokens: fixedTokens{}}.Authenticate(req(good))
	if !ok || err != nil || u.Name != "system:bootstrap:abcdef" || !slices.Equal(u.Groups, []string{"system:bootstrappers"}) {
		t.Fatalf("valid token: %+v %v %v", u, ok, err)
	}
	for _, c := range []struct {
		header string
		tokens TokenChecker
		ok     bool
		err    string
	}{
		{"", fixedTokens{}, false, ""},
		{"Basic Zm9vOmJhcg==", fixedTokens{}, false, ""},
		{"Bearer not-a-token", fixedTokens{}, false, "not a bootstrap token"},
		{"Bearer", fixedTokens{}, false, "carries no token"},
		{good, fixedTokens{ErrTokenExpired}, false, "expired"},
		{good, fixedTokens{ErrTokenNotFound}, false, "not found"},
		{good, fixedTokens{errors.New("etcd down")}, false, "could not be checked"},
	} {
		_, ok, err := TokenAuthenticator{Tokens: c.tokens}.Authenticate(req(c.header))
		if ok != c.ok || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: ok %v err %v; want ok %v err mentioning %q", c.header, ok, err, c.ok, c.err)
		}
	}
}
