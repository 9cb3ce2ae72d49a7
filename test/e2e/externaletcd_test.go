package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/control/storage"
	"github.com/plinth/plinth/control/storage/etcdtest"
)

// TestControlOnExternalEtcdOverTLS runs plinth-control on an external etcd that serves
// clients only over TLS with client certificates, as production etcd clusters do: the
// API works, its objects land in that etcd under /registry, /readyz reports the etcd
// link to a probe without credentials, and the log says which member answered and
// that the connection is encrypted.
func TestControlOnExternalEtcdOverTLS(t *testing.T) {
	member := etcdtest.StartTLS(t)
	certFile, keyFile := etcdtest.ClientFiles(t, member.CA, "plinth-control")
	c := startControl(t, "--etcd-servers", member.Endpoint, "--etcd-cafile", member.CA.CAFile(),
		"--etcd-certfile", certFile, "--etcd-keyfile", keyFile)
	if out, err := c.kubectl(t, "create", "namespace", "over-tls"); err != nil {
		t.Fatalf("kubectl create namespace: %v: %s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext, err := storage.ConnectExternal(ctx, storage.ExternalConfig{Endpoints: []string{member.Endpoint},
		CAFile: member.CA.CAFile(), CertFile: certFile, KeyFile: keyFile, ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	resp, err := ext.Client.Get(ctx, "/registry/core/namespaces/over-tls")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the namespace in the external etcd: %v, %d keys", err, len(resp.Kvs))
	}
	// A load balancer's probe brings no credentials; readiness covers the etcd link.
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the cluster CA: %v", err)
	}
	probe := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	probed, err := probe.Get(c.server + "/readyz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(probed.Body)
	probed.Body.Close()
	if probed.StatusCode != 200 || !strings.Contains(string(body), "[+]etcd ok") {
		t.Errorf("GET /readyz?verbose without credentials = %d %q, want 200 with [+]etcd ok", probed.StatusCode, body)
	}

	log, _ := os.ReadFile(c.control.log)
	if !strings.Contains(string(log), "external etcd answered") || !strings.Contains(string(log), "tls=true") {
		t.Errorf("plinth-control's log does not say it reached etcd over TLS:\n%s", tail(c.control.log, 20))
	}
}

// Wrong etcd settings stop plinth-control at once, with the flag named, before it
// writes anything.
func TestControlRefusesBadEtcdFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--etcd-servers", "https://127.0.0.1:2379", "--etcd-certfile", "/etc/etcd/client.crt"}, "--etcd-certfile and --etcd-keyfile go together"},
		{[]string{"--etcd-cafile", "/etc/etcd/ca.crt"}, "give --etcd-servers too"},
		{[]string{"--etcd-servers", "127.0.0.1:2379"}, "want a URL starting http://"},
		{[]string{"--etcd-servers", "http://127.0.0.1:2379", "--etcd-cafile", "/etc/etcd/ca.crt"}, "use https:// or unixs://"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		cmd := exec.Command(filepath.Join(binaries(t), "plinth-control"), append([]string{"--data-dir", dir}, c.args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("plinth-control %v: %v: %s; want a failure saying %q", c.args, err, out, c.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("plinth-control %v created its data directory before refusing: %v", c.args, err)
		}
	}
}
