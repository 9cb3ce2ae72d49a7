package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestIssueClientCert(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(start)
	a := mustLoadOrCreate(t, t.TempDir(), Options{Clock: clk})
	user, err := NodeUser("worker-1")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := a.IssueClientCert(user, []string{NodeGroup, "extra"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := parseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:worker-1" {
		t.Errorf("CN %q, want system:node:worker-1", cert.Subject.CommonName)
	}
	// DER sorts the members of a SET, so the order of groups is not kept.
	if want := []string{"extra", "system:nodes"}; !slices.Equal(slices.Sorted(slices.Values(cert.Subject.Organization)), want) {
		t.Errorf("O %v, want %v", cert.Subject.Organization, want)
	}
	if want := start.Add(LeafValidity); !cert.NotAfter.Equal(want) {
		t.Errorf("NotAfter %v, want %v", cert.NotAfter, want)
	}
	if cert.IsCA {
		t.Error("client certificate is a CA")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: a.ClientCAs(), CurrentTime: start, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify for client auth: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: a.ClientCAs(), CurrentTime: start, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate also verifies for server auth")
	}
	key, err := parsePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if ec, ok := key.(*ecdsa.PrivateKey); !ok || ec.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", key)
	}
	if !keyMatches(cert, key) {
		t.Error("returned key does not belong to the returned certificate")
	}

	short, _, err := a.IssueClientCert(ControlUser, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := parseCertificatePEM(short); c == nil || !c.NotAfter.Equal(start.Add(time.Hour)) {
		t.Errorf("certificate issued for 1h: %v", c)
	}
}

func TestIssueClientCertRejectsBadInput(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	for _, tc := range []struct {
		user     string
		groups   []string
		validity time.Duration
		want     string
	}{
		{"", nil, 0, "user is empty"},
		{"alice", []string{"ok", ""}, 0, "group [1] is empty"},
		{"alice", nil, -time.Hour, "-1h0m0s is negative"},
	} {
		_, _, err := a.IssueClientCert(tc.user, tc.groups, tc.validity)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("IssueClientCert(%q, %q, %v): error %v, want one containing %q", tc.user, tc.groups, tc.validity, err, tc.want)
		}
	}
}
