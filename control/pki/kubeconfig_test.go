package pki

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfigRoundTrip(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	certPEM, keyPEM, err := a.IssueClientCert(AdminUser, []string{AdminGroup}, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "etc", "plinth", "admin.kubeconfig")
	want := Kubeconfig{ClusterName: "lab", Server: "https://10.0.0.1:6443", User: AdminUser, CAPEM: a.CAPEM(), CertPEM: certPEM, KeyPEM: keyPEM}
	if err := WriteKubeconfig(path, want); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, filepath.Dir(path), 0o700)

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || ctx.Cluster != "lab" || ctx.AuthInfo != AdminUser {
		t.Fatalf("current context %q = %+v, want cluster lab and user %s", cfg.CurrentContext, ctx, AdminUser)
	}
	cluster, user := cfg.Clusters["lab"], cfg.AuthInfos[AdminUser]
	if cluster == nil || user == nil {
		t.Fatalf("clusters %v, users %v: want lab and %s", cfg.Clusters, cfg.AuthInfos, AdminUser)
	}
	if cluster.Server != want.Server || !bytes.Equal(cluster.CertificateAuthorityData, want.CAPEM) {
		t.Errorf("cluster server %q CA %d bytes, want %q and the CA", cluster.Server, len(cluster.CertificateAuthorityData), want.Server)
	}
	if !bytes.Equal(user.ClientCertificateData, certPEM) || !bytes.Equal(user.ClientKeyData, keyPEM) {
		t.Error("user's certificate or key data differ from what was written")
	}

	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != want.Server {
		t.Errorf("rest.Config Host %q, want %q", rc.Host, want.Server)
	}
	tlsc := rc.TLSClientConfig
	if !bytes.Equal(tlsc.CAData, want.CAPEM) || !bytes.Equal(tlsc.CertData, certPEM) || !bytes.Equal(tlsc.KeyData, keyPEM) {
		t.Error("rest.Config TLS data differ from the kubeconfig's")
	}
	if tlsc.Insecure {
		t.Error("rest.Config skips server verification")
	}
}

// A kubeconfig written by WriteClientKubeconfig gets client-go through a server that
// uses ServerTLSConfig, and the server sees the identity it was issued for.
func TestClientKubeconfigAgainstServer(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0].Subject
		fmt.Fprintf(w, "%s %s", peer.CommonName, strings.Join(peer.Organization, ","))
	}))
	srv.TLS = a.ServerTLSConfig()
	srv.StartTLS()
	defer srv.Close()

	user, err := NodeUser("worker-1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := a.WriteClientKubeconfig(path, srv.URL, user, []string{NodeGroup}); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL + "/whoami")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:node:worker-1 system:nodes"; string(body) != want {
		t.Errorf("server saw %q, want %q", body, want)
	}

	// Without the client certificate the same server turns the client away.
	anonymous := rest.AnonymousClientConfig(rc)
	anonClient, err := rest.HTTPClientFor(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := anonClient.Get(srv.URL + "/whoami"); err == nil {
		resp.Body.Close()
		t.Errorf("request without a client certificate got %s", resp.Status)
	}
}

func TestWriteKubeconfigReplacesAtomically(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteClientKubeconfig(path, "https://127.0.0.1:6443", AdminUser, []string{AdminGroup}); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	if _, err := clientcmd.LoadFromFile(path); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after the write, want only the kubeconfig", len(entries))
	}
}

func TestWriteKubeconfigRejectsIncompleteInput(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	other := mustLoadOrCreate(t, t.TempDir(), Options{})
	certPEM, keyPEM, err := a.IssueClientCert("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := other.IssueClientCert("alice", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	good := Kubeconfig{Server: "https://127.0.0.1:6443", User: "alice", CAPEM: a.CAPEM(), CertPEM: certPEM, KeyPEM: keyPEM}
	for name, tc := range map[string]struct {
		edit func(k *Kubeconfig)
		want string
	}{
		"no user":        {func(k *Kubeconfig) { k.User = "" }, "field User"},
		"plain http":     {func(k *Kubeconfig) { k.Server = "http://127.0.0.1:6443" }, `"http://127.0.0.1:6443"`},
		"no host":        {func(k *Kubeconfig) { k.Server = "https://" }, "field Server"},
		"no CA":          {func(k *Kubeconfig) { k.CAPEM = nil }, "field CAPEM"},
		"mismatched key": {func(k *Kubeconfig) { k.KeyPEM = otherKey }, "CertPEM and KeyPEM"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "x.kubeconfig")
			k := good
			tc.edit(&k)
			err := WriteKubeconfig(path, k)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, path, tc.want)
			}
			if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
				t.Errorf("rejected kubeconfig still created %s", filepath.Dir(path))
			}
		})
	}
	// The defaults fill in the cluster name.
	path := filepath.Join(t.TempDir(), "ok.kubeconfig")
	if err := WriteKubeconfig(path, good); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Clusters[DefaultClusterName] == nil {
		t.Errorf("clusters %v, want %q", cfg.Clusters, DefaultClusterName)
	}
}
