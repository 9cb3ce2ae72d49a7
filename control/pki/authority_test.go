package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// start is a fixed instant with whole seconds, because certificates store whole seconds.
var start = time.Date(2030, time.March, 1, 12, 0, 0, 0, time.UTC)

func mustLoadOrCreate(t *testing.T, dir string, opts Options) *Authority {
	t.Helper()
	a, err := LoadOrCreate(dir, opts)
	if err != nil {
		t.Fatalf("LoadOrCreate(%s): %v", dir, err)
	}
	return a
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := parseCertificatePEM(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

func TestLoadOrCreateFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	clk := testingclock.NewFakePassiveClock(start)
	a := mustLoadOrCreate(t, dir, Options{ServingHosts: []string{"Control.Example.com", "10.0.0.1"}, Clock: clk})

	assertMode(t, dir, 0o700)
	assertMode(t, a.CAFile(), 0o644)
	assertMode(t, filepath.Join(dir, "ca.key"), 0o600)
	assertMode(t, a.ServingCertFile(), 0o644)
	assertMode(t, a.ServingKeyFile(), 0o600)

	ca := readCert(t, a.CAFile())
	if !ca.IsCA || !ca.BasicConstraintsValid || !ca.MaxPathLenZero {
		t.Errorf("CA basic constraints: IsCA=%v valid=%v maxPathLenZero=%v, want all true", ca.IsCA, ca.BasicConstraintsValid, ca.MaxPathLenZero)
	}
	if want := x509.KeyUsageCertSign | x509.KeyUsageCRLSign; ca.KeyUsage != want {
		t.Errorf("CA key usage %v, want %v", ca.KeyUsage, want)
	}
	if want := start.Add(CAValidity); !ca.NotAfter.Equal(want) {
		t.Errorf("CA NotAfter %v, want %v", ca.NotAfter, want)
	}
	if pub, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA public key %T, want ECDSA P-256", ca.PublicKey)
	}
	if !bytes.Equal(a.CAPEM(), readFile(t, a.CAFile())) {
		t.Error("CAPEM() differs from the CA file")
	}

	serving := readCert(t, a.ServingCertFile())
	if want := start.Add(LeafValidity); !serving.NotAfter.Equal(want) {
		t.Errorf("serving NotAfter %v, want %v", serving.NotAfter, want)
	}
	for _, cert := range []*x509.Certificate{ca, serving} {
		if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() > 128 {
			t.Errorf("%s: serial %v is not a positive 128-bit number", cert.Subject.CommonName, cert.SerialNumber)
		}
	}
	if ca.SerialNumber.Cmp(serving.SerialNumber) == 0 {
		t.Error("CA and serving certificate share a serial number")
	}

	hosts := []string{"control.example.com", "localhost", "10.0.0.1", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err == nil && len(dnsNameProblems(strings.ToLower(name))) == 0 {
		hosts = append(hosts, strings.ToLower(name))
	}
	for _, host := range hosts {
		_, err := serving.Verify(x509.VerifyOptions{
			DNSName:     host,
			Roots:       a.ClientCAs(),
			CurrentTime: start,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("serving certificate for %q: %v", host, err)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: a.ClientCAs(), CurrentTime: start}); err == nil {
		t.Error("serving certificate verifies for other.example.com, which was never asked for")
	}
}

func TestLoadOrCreateReusesExistingFiles(t *testing.T) {
	dir := t.TempDir()
	opts := Options{ServingHosts: []string{"control.example.com"}}
	first := mustLoadOrCreate(t, dir, opts)
	caPEM := readFile(t, first.CAFile())
	caKey := readFile(t, filepath.Join(dir, "ca.key"))
	servingPEM := readFile(t, first.ServingCertFile())
	servingKey := readFile(t, first.ServingKeyFile())

	second := mustLoadOrCreate(t, dir, opts)
	if !bytes.Equal(second.CAPEM(), caPEM) || !bytes.Equal(readFile(t, second.CAFile()), caPEM) {
		t.Error("second LoadOrCreate changed the CA certificate")
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "ca.key")), caKey) {
		t.Error("second LoadOrCreate changed the CA key")
	}
	if !bytes.Equal(readFile(t, second.ServingCertFile()), servingPEM) || !bytes.Equal(readFile(t, second.ServingKeyFile()), servingKey) {
		t.Error("second LoadOrCreate re-issued a serving certificate that was still good")
	}
	// A client certificate from the first authority is trusted by the second.
	certPEM, _, err := first.IssueClientCert("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: second.ClientCAs(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate from before the restart: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestServingCertReissuedForNewHost(t *testing.T) {
	dir := t.TempDir()
	a := mustLoadOrCreate(t, dir, Options{ServingHosts: []string{"control.example.com"}})
	caPEM := readFile(t, a.CAFile())
	oldServing := readFile(t, a.ServingCertFile())
	oldKey := readFile(t, a.ServingKeyFile())

	a = mustLoadOrCreate(t, dir, Options{ServingHosts: []string{"control.example.com", "api.example.com", "10.9.8.7"}})
	if !bytes.Equal(readFile(t, a.CAFile()), caPEM) {
		t.Fatal("adding a serving host replaced the CA")
	}
	newServing := readFile(t, a.ServingCertFile())
	if bytes.Equal(newServing, oldServing) {
		t.Fatal("serving certificate not re-issued for the new hosts")
	}
	if bytes.Equal(readFile(t, a.ServingKeyFile()), oldKey) {
		t.Error("re-issued serving certificate kept the old key")
	}
	cert := readCert(t, a.ServingCertFile())
	for _, host := range []string{"control.example.com", "api.example.com", "10.9.8.7"} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("re-issued serving certificate: %v", err)
		}
	}

	// Asking for fewer hosts than the certificate covers is no reason to re-issue it.
	a = mustLoadOrCreate(t, dir, Options{ServingHosts: []string{"API.example.com"}})
	if !bytes.Equal(readFile(t, a.ServingCertFile()), newServing) {
		t.Error("serving certificate re-issued although it covers every requested host")
	}
}

func TestServingCertReissuedWhenUnusable(t *testing.T) {
	other := mustLoadOrCreate(t, t.TempDir(), Options{})
	for name, spoil := range map[string]func(t *testing.T, a *Authority){
		"missing cert": func(t *testing.T, a *Authority) { os.Remove(a.ServingCertFile()) },
		"missing key":  func(t *testing.T, a *Authority) { os.Remove(a.ServingKeyFile()) },
		"garbage cert": func(t *testing.T, a *Authority) {
			os.WriteFile(a.ServingCertFile(), []byte("not a certificate"), 0o644)
		},
		"key of another certificate": func(t *testing.T, a *Authority) {
			os.WriteFile(a.ServingKeyFile(), readFile(t, other.ServingKeyFile()), 0o600)
		},
		"signed by another CA": func(t *testing.T, a *Authority) {
			os.WriteFile(a.ServingCertFile(), readFile(t, other.ServingCertFile()), 0o644)
			os.WriteFile(a.ServingKeyFile(), readFile(t, other.ServingKeyFile()), 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := mustLoadOrCreate(t, dir, Options{})
			before := readFile(t, a.ServingCertFile())
			spoil(t, a)
			a = mustLoadOrCreate(t, dir, Options{})
			after := readFile(t, a.ServingCertFile())
			if bytes.Equal(before, after) {
				t.Fatal("serving certificate not re-issued")
			}
			cert := readCert(t, a.ServingCertFile())
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: a.ClientCAs()}); err != nil {
				t.Errorf("re-issued serving certificate: %v", err)
			}
			if _, err := parsePrivateKeyPEM(readFile(t, a.ServingKeyFile())); err != nil {
				t.Errorf("re-issued serving key: %v", err)
			}
		})
	}
}

func TestServingCertReissuedNearExpiry(t *testing.T) {
	dir := t.TempDir()
	clk := testingclock.NewFakePassiveClock(start)
	a := mustLoadOrCreate(t, dir, Options{Clock: clk})
	first := readFile(t, a.ServingCertFile())
	notAfter := readCert(t, a.ServingCertFile()).NotAfter

	clk.SetTime(notAfter.Add(-RenewBefore - time.Hour))
	a = mustLoadOrCreate(t, dir, Options{Clock: clk})
	if !bytes.Equal(readFile(t, a.ServingCertFile()), first) {
		t.Fatalf("serving certificate re-issued %v before expiry, earlier than the %v renewal window", RenewBefore+time.Hour, RenewBefore)
	}

	renewAt := notAfter.Add(-RenewBefore + time.Hour)
	clk.SetTime(renewAt)
	a = mustLoadOrCreate(t, dir, Options{Clock: clk})
	renewed := readCert(t, a.ServingCertFile())
	if want := renewAt.Add(LeafValidity); !renewed.NotAfter.Equal(want) {
		t.Errorf("serving certificate within %v of expiry: NotAfter %v after restart, want re-issued until %v", RenewBefore, renewed.NotAfter, want)
	}
	if got := a.ServerTLSConfig().Certificates[0].Leaf.NotAfter; !got.Equal(renewed.NotAfter) {
		t.Errorf("ServerTLSConfig serves a certificate valid until %v, want the re-issued one (%v)", got, renewed.NotAfter)
	}
}

func TestLeafCertificatesNeverOutliveTheCA(t *testing.T) {
	dir := t.TempDir()
	clk := testingclock.NewFakePassiveClock(start)
	a := mustLoadOrCreate(t, dir, Options{Clock: clk})
	caNotAfter := readCert(t, a.CAFile()).NotAfter

	clk.SetTime(caNotAfter.Add(-100 * 24 * time.Hour))
	certPEM, _, err := a.IssueClientCert("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.NotAfter.Equal(caNotAfter) {
		t.Errorf("client certificate issued 100 days before CA expiry: NotAfter %v, want the CA's %v", cert.NotAfter, caNotAfter)
	}
}

func TestCAKeyMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	a := mustLoadOrCreate(t, dir, Options{})
	other := t.TempDir()
	mustLoadOrCreate(t, other, Options{})
	caKeyPath := filepath.Join(dir, "ca.key")
	if err := os.WriteFile(caKeyPath, readFile(t, filepath.Join(other, "ca.key")), 0o600); err != nil {
		t.Fatal(err)
	}
	serving := readFile(t, a.ServingCertFile())

	_, err := LoadOrCreate(dir, Options{ServingHosts: []string{"new.example.com"}})
	if err == nil {
		t.Fatal("LoadOrCreate accepted a CA key that does not match the CA certificate")
	}
	if !strings.Contains(err.Error(), caKeyPath) || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("error %q should name %s and say the key does not match", err, caKeyPath)
	}
	if !bytes.Equal(readFile(t, a.ServingCertFile()), serving) {
		t.Error("refused CA still re-issued the serving certificate")
	}
}

func TestBrokenCARefused(t *testing.T) {
	for name, tc := range map[string]struct {
		spoil    func(t *testing.T, dir string, a *Authority)
		wantFile string
		wantText string
	}{
		"key missing": {
			spoil:    func(t *testing.T, dir string, a *Authority) { os.Remove(filepath.Join(dir, "ca.key")) },
			wantFile: "ca.key", wantText: "does not exist",
		},
		"cert missing": {
			spoil:    func(t *testing.T, dir string, a *Authority) { os.Remove(a.CAFile()) },
			wantFile: "ca.crt", wantText: "does not exist",
		},
		"cert garbage": {
			spoil:    func(t *testing.T, dir string, a *Authority) { os.WriteFile(a.CAFile(), []byte("junk"), 0o644) },
			wantFile: "ca.crt", wantText: "no PEM block",
		},
		"key garbage": {
			spoil: func(t *testing.T, dir string, a *Authority) {
				os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("junk")}), 0o600)
			},
			wantFile: "ca.key", wantText: "parse EC PRIVATE KEY",
		},
		"not a CA": {
			spoil: func(t *testing.T, dir string, a *Authority) {
				os.WriteFile(a.CAFile(), readFile(t, a.ServingCertFile()), 0o644)
				os.WriteFile(filepath.Join(dir, "ca.key"), readFile(t, a.ServingKeyFile()), 0o600)
			},
			wantFile: "ca.crt", wantText: "not a CA",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := mustLoadOrCreate(t, dir, Options{})
			tc.spoil(t, dir, a)
			_, err := LoadOrCreate(dir, Options{})
			if err == nil {
				t.Fatal("LoadOrCreate accepted a broken CA")
			}
			if want := filepath.Join(dir, tc.wantFile); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q should name %s and contain %q", err, want, tc.wantText)
			}
			// The broken CA must never be replaced by a new one.
			if _, err := os.Stat(filepath.Join(dir, tc.wantFile)); name == "key missing" || name == "cert missing" {
				if err == nil {
					t.Errorf("%s was recreated", tc.wantFile)
				}
			}
		})
	}
}

func TestExpiredCARefused(t *testing.T) {
	dir := t.TempDir()
	clk := testingclock.NewFakePassiveClock(start)
	a := mustLoadOrCreate(t, dir, Options{Clock: clk})
	clk.SetTime(start.Add(CAValidity + time.Second))
	_, err := LoadOrCreate(dir, Options{Clock: clk})
	if err == nil || !strings.Contains(err.Error(), a.CAFile()) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("LoadOrCreate with an expired CA: error %v, want one naming %s and saying it expired", err, a.CAFile())
	}
}

func TestInvalidServingHostChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	_, err := LoadOrCreate(dir, Options{ServingHosts: []string{"good.example.com", "bad_host!"}})
	if err == nil || !strings.Contains(err.Error(), `"bad_host!"`) {
		t.Fatalf("error %v, want one naming \"bad_host!\"", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s exists after a rejected LoadOrCreate (stat: %v)", dir, err)
	}
}

// An operator may bring a CA made elsewhere, with an RSA key in PKCS#8 form.
func TestExistingRSACAIsUsed(t *testing.T) {
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "operator-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour * 400),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(filepath.Join(dir, "ca.crt"), certPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	a := mustLoadOrCreate(t, dir, Options{})
	if !bytes.Equal(a.CAPEM(), certPEM) {
		t.Fatal("operator's CA was replaced")
	}
	serving := readCert(t, a.ServingCertFile())
	if err := serving.CheckSignatureFrom(readCert(t, a.CAFile())); err != nil {
		t.Errorf("serving certificate not signed by the operator's CA: %v", err)
	}
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: a.ClientCAs()}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
}

func TestParseServingHosts(t *testing.T) {
	got, err := parseServingHosts([]string{"A.example.com", "a.example.com", "*.svc.example.com", "10.0.0.1", "10.0.0.1", "::ffff:10.0.0.1", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.example.com", "*.svc.example.com"}; strings.Join(got.dnsNames, ",") != strings.Join(want, ",") {
		t.Errorf("DNS names %v, want %v", got.dnsNames, want)
	}
	if want := []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1")}; len(got.ips) != len(want) || !got.ips[0].Equal(want[0]) || !got.ips[1].Equal(want[1]) {
		t.Errorf("IPs %v, want %v", got.ips, want)
	}
	for _, bad := range []string{"", "host:6443", "[::1]", "under_score.example.com", "-leading.example.com", "a..b", "*", "foo.*.example.com"} {
		if _, err := parseServingHosts([]string{"ok.example.com", bad}); err == nil {
			t.Errorf("parseServingHosts accepted %q", bad)
		} else if !strings.Contains(err.Error(), "[1]") {
			t.Errorf("error for %q does not say which entry: %v", bad, err)
		}
	}
}
