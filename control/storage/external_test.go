package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/control/pki"
	"github.com/plinth/plinth/control/storage/etcdtest"
)

// connectWithClientCertificate connects to member with a client certificate from its CA.
func connectWithClientCertificate(t *testing.T, member *etcdtest.TLSMember) *External {
	t.Helper()
	certFile, keyFile := etcdtest.ClientFiles(t, member.CA, "plinth-control")
	ext, err := ConnectExternal(context.Background(), ExternalConfig{
		Endpoints: []string{member.Endpoint}, CAFile: member.CA.CAFile(),
		CertFile: certFile, KeyFile: keyFile, ReadyTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ext.Close)
	return ext
}

func TestConnectExternalOverTLSWithClientCertificate(t *testing.T) {
	etcd := etcdtest.StartTLS(t)
	ctx := context.Background()
	ext := connectWithClientCertificate(t, etcd)
	if !ext.TLS || ext.Endpoint != etcd.Endpoint || ext.Version == "" {
		t.Errorf("connected as %+v; want TLS to %s with the member's version", ext, etcd.Endpoint)
	}
	store := New(ext.Client, "/registry")
	if _, err := store.Create(ctx, "/leases/a", []byte("x")); err != nil {
		t.Fatalf("write over TLS: %v", err)
	}
	if kv, err := store.Get(ctx, "/leases/a"); err != nil || string(kv.Value) != "x" {
		t.Fatalf("read back over TLS: %+v, %v", kv, err)
	}
}

// Over a unix socket with TLS, the member's certificate names the socket's file name,
// which the etcd client verifies; so does the start-up check.
func TestConnectExternalOverUnixSocketWithTLS(t *testing.T) {
	etcd := etcdtest.StartTLSUnix(t)
	ctx := context.Background()
	ext := connectWithClientCertificate(t, etcd)
	if !ext.TLS || !strings.HasPrefix(ext.Endpoint, "unixs://") {
		t.Errorf("connected as %+v; want TLS over %s", ext, etcd.Endpoint)
	}
	if _, err := New(ext.Client, "/registry").Create(ctx, "/leases/a", []byte("x")); err != nil {
		t.Fatalf("write over unixs: %v", err)
	}
}

// A client that cannot connect must say why at start, naming the endpoint, within its
// ReadyTimeout: an untrusted server, a missing client certificate, nothing listening.
func TestConnectExternalFailsWithTheReason(t *testing.T) {
	etcd := etcdtest.StartTLS(t)
	certFile, keyFile := etcdtest.ClientFiles(t, etcd.CA, "plinth-control")
	other, err := pki.LoadOrCreate(filepath.Join(t.TempDir(), "other"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey := etcdtest.ClientFiles(t, other, "plinth-control")
	cases := []struct {
		name string
		cfg  ExternalConfig
		want string
	}{
		{"server signed by an untrusted CA", ExternalConfig{Endpoints: []string{etcd.Endpoint}, CAFile: other.CAFile(), CertFile: certFile, KeyFile: keyFile}, "certificate signed by unknown authority"},
		{"no client certificate", ExternalConfig{Endpoints: []string{etcd.Endpoint}, CAFile: etcd.CA.CAFile()}, "certificate required"},
		{"client certificate from another CA", ExternalConfig{Endpoints: []string{etcd.Endpoint}, CAFile: etcd.CA.CAFile(), CertFile: otherCert, KeyFile: otherKey}, "unknown certificate authority"},
		{"nothing listening", ExternalConfig{Endpoints: []string{"http://" + etcdtest.FreeLoopbackAddr(t)}}, "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.ReadyTimeout = time.Second
			started := time.Now()
			ext, err := ConnectExternal(context.Background(), c.cfg)
			if err == nil {
				ext.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.cfg.Endpoints[0]) {
				t.Errorf("error %q; want it to name %s and say %q", err, c.cfg.Endpoints[0], c.want)
			}
			t.Logf("%v", err)
			if took := time.Since(started); took > 15*time.Second {
				t.Errorf("gave up after %s with a 1s ReadyTimeout", took)
			}
		})
	}
}

func TestExternalConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  ExternalConfig
		want string // empty: valid
	}{
		{ExternalConfig{Endpoints: []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"}}, ""},
		{ExternalConfig{Endpoints: []string{"unix:///run/etcd.sock"}}, ""},
		{ExternalConfig{Endpoints: []string{"https://e1:2379"}}, ""}, // system roots, no client certificate
		{ExternalConfig{Endpoints: []string{"https://e1:2379"}, CAFile: "ca.crt", CertFile: "c.crt", KeyFile: "c.key"}, ""},
		{ExternalConfig{}, ""}, // embedded etcd
		{ExternalConfig{Endpoints: []string{"http://e1:2379", "https://e2:2379"}}, "one cluster is reached one way"},
		{ExternalConfig{Endpoints: []string{"10.0.0.1:2379"}}, "want a URL starting http://"},
		{ExternalConfig{Endpoints: []string{"ftp://e1"}}, "want a URL starting"},
		{ExternalConfig{Endpoints: []string{"http://"}}, "has no host"},
		{ExternalConfig{CAFile: "ca.crt"}, "give --etcd-servers too"},
		{ExternalConfig{Endpoints: []string{"http://e1:2379"}, CAFile: "ca.crt"}, "use https:// or unixs://"},
		{ExternalConfig{Endpoints: []string{"https://e1:2379"}, CertFile: "c.crt"}, "give both or neither"},
		{ExternalConfig{Endpoints: []string{"https://e1:2379"}, KeyFile: "c.key"}, "give both or neither"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.want == "" && err != nil {
			t.Errorf("%+v: %v; want valid", c.cfg, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
}

// Bad files are reported before anything dials, naming the flag.
func TestConnectExternalReportsBadFiles(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  ExternalConfig
		want string
	}{
		{ExternalConfig{CAFile: filepath.Join(dir, "missing.crt")}, "--etcd-cafile"},
		{ExternalConfig{CAFile: notPEM}, "holds no PEM certificate"},
		{ExternalConfig{CertFile: notPEM, KeyFile: notPEM}, "--etcd-certfile"},
	} {
		c.cfg.Endpoints = []string{"https://" + etcdtest.FreeLoopbackAddr(t)}
		c.cfg.ReadyTimeout = time.Minute
		started := time.Now()
		if _, err := ConnectExternal(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error saying %q", c.cfg, err, c.want)
		}
		if took := time.Since(started); took > time.Second {
			t.Errorf("%+v: took %s; a bad file needs no dialling", c.cfg, took)
		}
	}
}

// The client certificate is read at each handshake, so certificates rotated in place
// are used on the next connection without a restart.
func TestClientCertificateIsReadAtEachHandshake(t *testing.T) {
	ca, err := pki.LoadOrCreate(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := etcdtest.ClientFiles(t, ca, "first")
	cfg := ExternalConfig{Endpoints: []string{"https://e1:2379"}, CertFile: certFile, KeyFile: keyFile}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	first, err := tlsCfg.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	newCert, newKey := etcdtest.ClientFiles(t, ca, "second")
	for from, to := range map[string]string{newCert: certFile, newKey: keyFile} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	second, err := tlsCfg.GetClientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first.Certificate[0], second.Certificate[0]) {
		t.Error("the handshake after rotation presented the old certificate")
	}
}
