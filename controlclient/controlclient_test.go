package controlclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth"
	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/pki"
)

const testToken = "abcdef.0123456789abcdef"

// fakeControl signs node certificates like the control service's endpoint, for a
// fixed bootstrap token or a client certificate, and records what it saw.
type fakeControl struct {
	url      string
	ca       *pki.Authority
	caHash   string
	validity time.Duration
	requests atomic.Int32
	fail     atomic.Bool
	// renewedBy is the user of the last request authenticated by a certificate.
	renewedBy atomic.Value
	// clock, when set, is the time client certificates are verified at (the TLS layer
	// would verify them at the real time).
	clock clock.PassiveClock
}

func newFakeControl(t *testing.T, chainCA bool) *fakeControl {
	t.Helper()
	return newFakeControlWithClock(t, chainCA, nil)
}

// newFakeControlWithClock signs and verifies client certificates on clk (nil: the real
// clock), so certificates and a renewer on the same fake clock agree on what "now" is.
func newFakeControlWithClock(t *testing.T, chainCA bool, clk clock.PassiveClock) *fakeControl {
	t.Helper()
	dir := t.TempDir()
	authority, err := pki.LoadOrCreate(dir, pki.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ca := authority
	f := &fakeControl{ca: ca, caHash: authapi.CACertHash(ca.CACertificate()), validity: time.Hour, clock: clk}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	tc := authority.ServerTLSConfig()
	tc.ClientAuth = tls.VerifyClientCertIfGiven
	if clk != nil {
		tc.ClientAuth = tls.RequestClientCert // verified in serve, at clk's time
	}
	if chainCA {
		tc.Certificates[0].Certificate = append(tc.Certificates[0].Certificate, ca.CACertificate().Raw)
	}
	srv.TLS = tc
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeControl) serve(w http.ResponseWriter, req *http.Request) {
	f.requests.Add(1)
	if req.URL.Path != authapi.NodeCertificateRequestsPath || req.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var user string
	switch {
	case req.TLS != nil && len(req.TLS.VerifiedChains) > 0:
		user = req.TLS.VerifiedChains[0][0].Subject.CommonName
		f.renewedBy.Store(user)
	case f.clock != nil && req.TLS != nil && len(req.TLS.PeerCertificates) > 0:
		roots := x509.NewCertPool()
		roots.AddCert(f.ca.CACertificate())
		leaf := req.TLS.PeerCertificates[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: f.clock.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			http.Error(w, `{"message":"bad certificate"}`, http.StatusUnauthorized)
			return
		}
		user = leaf.Subject.CommonName
		f.renewedBy.Store(user)
	case req.Header.Get("Authorization") == "Bearer "+testToken:
		user = "system:bootstrap:abcdef"
	default:
		http.Error(w, `{"message":"bad token"}`, http.StatusUnauthorized)
		return
	}
	if f.fail.Load() {
		http.Error(w, `{"message":"signer unavailable"}`, http.StatusInternalServerError)
		return
	}
	var in authapi.NodeCertificateRequest
	if err := jsonDecode(req, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	csr, name, err := auth.ParseNodeCSR([]byte(in.Request))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if strings.HasPrefix(user, "system:node:") && user != "system:node:"+name {
		http.Error(w, "not yours", http.StatusForbidden)
		return
	}
	cert, err := f.ca.SignClientCertificate(csr.PublicKey, csr.Subject.CommonName, []string{"system:nodes"}, f.validity)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	jsonWrite(w, http.StatusCreated, authapi.NodeCertificateRequest{Request: in.Request, Certificate: string(cert), CACertificate: string(f.ca.CAPEM())})
}

func joinOpts(t *testing.T, f *fakeControl) JoinOptions {
	dir := t.TempDir()
	return JoinOptions{
		Server: f.url, Token: testToken, CACertHash: f.caHash, NodeName: "node-a",
		Kubeconfig: filepath.Join(dir, "etc", "kubeconfig"), CertDir: filepath.Join(dir, "pki"),
	}
}

func TestJoinWritesAWorkingKubeconfig(t *testing.T) {
	f := newFakeControl(t, true)
	o := joinOpts(t, f)
	res, err := Join(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.NodeName != "node-a" || res.CertFile != filepath.Join(o.CertDir, ClientCertFileName) {
		t.Fatalf("result %+v", res)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != f.url || cfg.CertFile != res.CertFile || cfg.KeyFile != res.CertFile || len(cfg.CertData) > 0 {
		t.Fatalf("kubeconfig: host %s, cert %s, key %s, embedded cert %v", cfg.Host, cfg.CertFile, cfg.KeyFile, len(cfg.CertData) > 0)
	}
	if string(cfg.CAData) != string(f.ca.CAPEM()) {
		t.Fatal("the kubeconfig does not embed the pinned CA")
	}
	for path, mode := range map[string]os.FileMode{o.Kubeconfig: 0o600, res.CertFile: 0o600, filepath.Join(o.CertDir, CAFileName): 0o644, o.CertDir: 0o700 | os.ModeDir} {
		st, err := os.Stat(path)
		if err != nil || st.Mode() != mode {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode(), err, mode)
		}
	}
	pair, err := tls.LoadX509KeyPair(res.CertFile, res.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if leaf.Subject.CommonName != "system:node:node-a" || !leaf.NotAfter.Equal(res.NotAfter) {
		t.Fatalf("stored certificate for %q until %s", leaf.Subject.CommonName, leaf.NotAfter)
	}
}

func TestJoinWithWrongHashNeverSendsTheToken(t *testing.T) {
	f := newFakeControl(t, true)
	o := joinOpts(t, f)
	o.CACertHash = "sha256:" + strings.Repeat("00", 32)
	_, err := Join(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "no CA certificate with the pinned public key hash") || !strings.Contains(err.Error(), f.caHash) {
		t.Fatalf("join with a wrong hash: %v", err)
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("the server received %d requests: the token may have been sent", n)
	}
	if _, err := os.Stat(o.Kubeconfig); !os.IsNotExist(err) {
		t.Fatalf("a failed join wrote the kubeconfig: %v", err)
	}
}

func TestJoinNeedsTheCAInTheChain(t *testing.T) {
	f := newFakeControl(t, false)
	_, err := Join(context.Background(), joinOpts(t, f))
	if err == nil || !strings.Contains(err.Error(), "sent no CA certificate") {
		t.Fatalf("join against a server without the CA in its chain: %v", err)
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("the server received %d requests", n)
	}
}

func TestPinnedVerificationChecksTheServerName(t *testing.T) {
	f := newFakeControl(t, true)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(f.url, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	chain := conn.ConnectionState().PeerCertificates
	conn.Close()
	pin, err := authapi.ParseCACertHash(f.caHash)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err := verifyPinned(chain, "127.0.0.1", pin, time.Now()); err != nil || !ca.Equal(f.ca.CACertificate()) {
		t.Fatalf("the right name: %v", err)
	}
	if _, err := verifyPinned(chain, "control.example", pin, time.Now()); err == nil || !strings.Contains(err.Error(), "does not verify against the pinned CA") {
		t.Fatalf("a name the serving certificate does not cover: %v", err)
	}
	if _, err := verifyPinned(chain, "127.0.0.1", pin, time.Now().Add(20*365*24*time.Hour)); err == nil {
		t.Fatal("verification succeeded after the certificates expired")
	}
	// The serving certificate itself is never taken for the CA, even if pinned.
	leafPin, _ := authapi.ParseCACertHash(authapi.CACertHash(chain[0]))
	if _, err := verifyPinned(chain, "127.0.0.1", leafPin, time.Now()); err == nil {
		t.Fatal("pinning the serving certificate's key was accepted")
	}
}

func TestJoinChecksArgumentsFirst(t *testing.T) {
	f := newFakeControl(t, true)
	for _, c := range []struct {
		mutate func(*JoinOptions)
		want   string
	}{
		{func(o *JoinOptions) { o.Server = "http://" + strings.TrimPrefix(f.url, "https://") }, "--server"},
		{func(o *JoinOptions) { o.Server = f.url + "/api" }, "--server"},
		{func(o *JoinOptions) { o.Token = "abcdef" }, "--token"},
		{func(o *JoinOptions) { o.CACertHash = "md5:00" }, "--ca-cert-hash"},
		{func(o *JoinOptions) { o.NodeName = "Not_Valid" }, "--node-name"},
	} {
		o := joinOpts(t, f)
		c.mutate(&o)
		if _, err := Join(context.Background(), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, c.want)
		}
	}
	if n := f.requests.Load(); n != 0 {
		t.Fatalf("invalid arguments reached the server %d times", n)
	}
}

func TestJoinRefusedToken(t *testing.T) {
	f := newFakeControl(t, true)
	o := joinOpts(t, f)
	o.Token = "abcdef.ffffffffffffffff"
	if _, err := Join(context.Background(), o); err == nil || !strings.Contains(err.Error(), "bad token") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("join with a refused token: %v", err)
	}
}

func TestRenewalDeadline(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := &x509.Certificate{NotBefore: start, NotAfter: start.Add(100 * time.Hour)}
	for jitter, want := range map[float64]time.Duration{0: 70 * time.Hour, 0.5: 80 * time.Hour, 0.999999: 90 * time.Hour} {
		got := renewalDeadline(cert, jitter).Sub(start)
		if (got - want).Abs() > time.Second {
			t.Errorf("jitter %v: renewal after %v, want %v", jitter, got, want)
		}
	}
}

func TestRenewerRejectsEmbeddedCertificates(t *testing.T) {
	dir := t.TempDir()
	authority, err := pki.LoadOrCreate(filepath.Join(dir, "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := authority.WriteClientKubeconfig(path, "https://127.0.0.1:6443", "system:node:a", []string{"system:nodes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCertRenewer(path, RenewerOptions{}); err == nil || !strings.Contains(err.Error(), ErrNotRenewable.Error()) {
		t.Fatalf("renewer for an embedded certificate: %v", err)
	}
}

func certOf(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestJoinCommand(t *testing.T) {
	f := newFakeControl(t, true)
	o := joinOpts(t, f)
	var out, errOut strings.Builder
	code := JoinCommand(context.Background(), []string{"--server", f.url, "--token", testToken, "--ca-cert-hash", f.caHash,
		"--node-name", "node-a", "--kubeconfig", o.Kubeconfig, "--cert-dir", o.CertDir}, &out, &errOut)
	if code != 0 || !strings.Contains(out.String(), "node node-a joined: kubeconfig "+o.Kubeconfig) {
		t.Fatalf("join: %d %q %q", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(o.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := JoinCommand(context.Background(), []string{"--server", f.url}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "missing [--token --ca-cert-hash]") {
		t.Fatalf("missing flags: %d %q", code, errOut.String())
	}
	errOut.Reset()
	code = JoinCommand(context.Background(), []string{"--server", f.url, "--token", testToken, "--ca-cert-hash", "sha256:" + strings.Repeat("0", 64),
		"--node-name", "node-a", "--kubeconfig", o.Kubeconfig + ".2", "--cert-dir", o.CertDir}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "the token was not sent") {
		t.Fatalf("wrong hash: %d %q", code, errOut.String())
	}
}
