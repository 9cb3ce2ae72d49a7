package authapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseToken(t *testing.T) {
	good := []string{"abcdef.0123456789abcdef", "a1b2c3.zzzzzzzzzzzzzzzz"}
	for _, s := range good {
		tok, err := ParseToken(s)
		if err != nil {
			t.Errorf("ParseToken(%q): %v", s, err)
			continue
		}
		if tok.String() != s || tok.ID != s[:6] || tok.Secret != s[7:] {
			t.Errorf("ParseToken(%q) = %+v", s, tok)
		}
	}
	bad := map[string]string{
		"":                         "no dot",
		"abcdef0123456789abcdef":   "no dot",
		"ABCDEF.0123456789abcdef":  "ID",
		"abcde.0123456789abcdef":   "ID",
		"abcdef.0123456789abcde":   "secret",
		"abcdef.0123456789abcdeF":  "secret",
		"abcdef.0123456789abcdef.": "secret",
		"abcdef.0123456789abcdeff": "secret",
	}
	for s, want := range bad {
		_, err := ParseToken(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseToken(%q) error %v, want one mentioning %q", s, err, want)
		}
		if err != nil && len(s) > 7 && strings.Contains(err.Error(), s[7:]) {
			t.Errorf("ParseToken(%q) error repeats the secret: %v", s, err)
		}
	}
}

func TestBearerToken(t *testing.T) {
	cases := []struct {
		header  string
		token   string
		ok, err bool
	}{
		{"", "", false, false},
		{"Basic dXNlcjpwYXNz", "", false, false},
		{"Bearer abc.def", "abc.def", true, false},
		{"bearer abc.def", "abc.def", true, false},
		{"BEARER\tabc.def  ", "abc.def", true, false},
		{"Bearer", "", true, true},
		{"Bearer   ", "", true, true},
		{"Bearer a b", "", true, true},
		{"Bearerx abc", "", false, false},
	}
	for _, c := range cases {
		token, ok, err := BearerToken(c.header)
		if token != c.token || ok != c.ok || (err != nil) != c.err {
			t.Errorf("BearerToken(%q) = %q, %v, %v; want %q, %v, error %v", c.header, token, ok, err, c.token, c.ok, c.err)
		}
	}
}

func selfSigned(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCACertHash(t *testing.T) {
	cert := selfSigned(t)
	// Computed independently: the digest of the DER SubjectPublicKeyInfo.
	spki, err := x509.MarshalPKIXPublicKey(cert.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	want := "sha256:" + hex.EncodeToString(sum[:])
	got := CACertHash(cert)
	if got != want {
		t.Fatalf("CACertHash = %s, want %s", got, want)
	}
	h, err := ParseCACertHash(strings.ToUpper(got[:7]) + strings.ToUpper(got[7:]))
	if err == nil {
		t.Fatalf("ParseCACertHash accepted an upper-case prefix: %v", h)
	}
	h, err = ParseCACertHash("sha256:" + strings.ToUpper(got[7:]))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Matches(cert) || h.String() != want {
		t.Fatalf("parsed hash %s does not match the certificate", h)
	}
	if h.Matches(selfSigned(t)) {
		t.Fatal("hash matches another key")
	}
	for _, bad := range []string{"", want[7:], "sha1:" + want[7:], want[:len(want)-1], want + "0", want[:len(want)-1] + "g"} {
		if _, err := ParseCACertHash(bad); err == nil {
			t.Errorf("ParseCACertHash(%q) accepted", bad)
		}
	}
}
