package etcdtest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/plinth/plinth/control/pki"
)

// TLSMember is a running etcd member serving clients at Endpoint (https:// or unixs://) with the
// serving certificate of CA, and accepting only client certificates CA signed.
type TLSMember struct {
	Endpoint string
	CA       *pki.Authority
}

// StartTLS starts the member on loopback TCP; the test's cleanup stops it.
func StartTLS(t testing.TB) *TLSMember {
	t.Helper()
	return start(t, func(string) url.URL { return url.URL{Scheme: "https", Host: FreeLoopbackAddr(t)} }, nil)
}

// StartTLSUnix starts the member on a unix socket (unixs://), its certificate naming
// the socket's file name as the etcd client requires; the test's cleanup stops it.
func StartTLSUnix(t testing.TB) *TLSMember {
	t.Helper()
	return start(t, func(dir string) url.URL { return url.URL{Scheme: "unixs", Path: filepath.Join(dir, unixSocketName)} },
		[]string{unixSocketName})
}

const unixSocketName = "etcd-client.sock"

func start(t testing.TB, clientURL func(dir string) url.URL, servingHosts []string) *TLSMember {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreate(filepath.Join(dir, "pki"), pki.Options{ServingHosts: servingHosts})
	if err != nil {
		t.Fatal(err)
	}
	client := clientURL(dir)
	peer := url.URL{Scheme: "unix", Path: filepath.Join(dir, "peer.sock")}
	cfg := embed.NewConfig()
	cfg.Name = "tls"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile: ca.ServingCertFile(), KeyFile: ca.ServingKeyFile(),
		TrustedCAFile: ca.CAFile(), ClientCertAuth: true,
	}
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30s")
	}
	return &TLSMember{Endpoint: client.String(), CA: ca}
}

// ClientFiles writes a client certificate for name and its key, signed by ca, and
// returns their files.
func ClientFiles(t testing.TB, ca *pki.Authority, name string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := ca.IssueClientCert(name, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// FreeLoopbackAddr returns a 127.0.0.1 address nothing listened on a moment ago.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
