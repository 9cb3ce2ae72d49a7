package nodeproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/pki"
)

func authority(t *testing.T) *pki.Authority {
	t.Helper()
	a, err := pki.LoadOrCreate(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// nodeServer is a node API stand-in serving with a certificate of ca for 127.0.0.1.
func nodeServer(t *testing.T, ca *pki.Authority, h http.Handler) (*httptest.Server, int32) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	certPEM, err := ca.SignServingCertificate(key.Public(), "system:node:n1", []string{"system:nodes"}, nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{block.Bytes}, PrivateKey: key}}, ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port, _ := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	return srv, int32(port)
}

func nodeAt(port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.Addresses = addrs
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}

func newProxy(t *testing.T, ca *pki.Authority, node *corev1.Node) *Proxy {
	t.Helper()
	certPEM, keyPEM, err := ca.IssueClientCert("system:plinth-control:node-client", []string{"system:masters"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{CA: ca.CACertificate(), ClientCertificate: pair, Nodes: func(_ context.Context, name string) (*corev1.Node, error) {
		if node == nil || name != node.Name {
			return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
		}
		return node, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func proxyLogs(p *Proxy, q url.Values) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/web/log", nil)
	p.ProxyContainerLogs(rec, req, "n1", "ns", "web", "app", q)
	return rec
}

var internal = corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}

func TestProxyStreamsWithTheControlServiceIdentity(t *testing.T) {
	ca := authority(t)
	var gotPath, gotQuery, gotUser string
	_, port := nodeServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		if len(r.TLS.PeerCertificates) > 0 {
			gotUser = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_, _ = io.WriteString(w, "line 1\nline 2\n")
	}))
	p := newProxy(t, ca, nodeAt(port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}, internal))
	rec := proxyLogs(p, url.Values{"tailLines": {"2"}, "follow": {"true"}})
	if rec.Code != http.StatusOK || rec.Body.String() != "line 1\nline 2\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	if gotPath != "/containerLogs/ns/web/app" || gotQuery != "follow=true&tailLines=2" || gotUser != "system:plinth-control:node-client" {
		t.Errorf("node saw %s?%s from %q", gotPath, gotQuery, gotUser)
	}
	if !rec.Flushed {
		t.Error("the stream was not flushed")
	}
}

func TestProxyRefusals(t *testing.T) {
	ca := authority(t)
	_, port := nodeServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "container \"app\" in pod ns/web has no logs on this node", http.StatusNotFound)
	}))
	_, foreignPort := nodeServer(t, authority(t), http.NotFoundHandler())
	for _, c := range []struct {
		name string
		node *corev1.Node
		code int
		want string
	}{
		{"no port", nodeAt(0, internal), http.StatusServiceUnavailable, "daemonEndpoints"},
		{"no InternalIP", nodeAt(port, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}), http.StatusServiceUnavailable, "InternalIP"},
		{"no node", nil, http.StatusNotFound, "n1"},
		{"a serving certificate of another CA", nodeAt(foreignPort, internal), http.StatusServiceUnavailable, "certificate"},
		{"the node has no such log", nodeAt(port, internal), http.StatusNotFound, "has no logs on this node"},
	} {
		rec := proxyLogs(newProxy(t, ca, c.node), nil)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %d containing %q", c.name, rec.Code, rec.Body.String(), c.code, c.want)
		}
	}
}
