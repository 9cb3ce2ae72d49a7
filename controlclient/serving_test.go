package controlclient_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/controlclient"
)

// A joined node gets a serving certificate for the names its Node reports, keeps it
// while they hold, replaces it when they change, and cannot get one for a foreign IP.
func TestServingCertificateFromTheControlService(t *testing.T) {
	c := startControl(t, time.Hour)
	res, client := c.mustJoin(t, c.newToken(t, time.Hour).Token, "node-s")
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-s"}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setAddresses := func(ips ...string) {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, "node-s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-s"}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setAddresses("127.0.0.1")
	names := []net.IP{net.ParseIP("127.0.0.1")}
	file := filepath.Join(t.TempDir(), "serving.pem")
	m, err := controlclient.NewServingCertManager(res.Kubeconfig, file, "node-s",
		func() ([]string, []net.IP) { return []string{"node-s"}, names }, controlclient.RenewerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if did, err := m.Ensure(ctx); err != nil || !did {
		t.Fatalf("first Ensure: %v, %v", did, err)
	}
	first := leafOf(t, file)
	if err := first.VerifyHostname("127.0.0.1"); err != nil || first.Subject.CommonName != "system:node:node-s" {
		t.Fatalf("serving certificate %q: %v", first.Subject.CommonName, err)
	}
	if did, err := m.Ensure(ctx); err != nil || did {
		t.Fatalf("second Ensure with nothing changed: %v, %v", did, err)
	}

	// A new address the Node reports gets a new certificate.
	setAddresses("127.0.0.1", "127.0.0.2")
	names = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.2")}
	if did, err := m.Ensure(ctx); err != nil || !did {
		t.Fatalf("Ensure after an address change: %v, %v", did, err)
	}
	if err := leafOf(t, file).VerifyHostname("127.0.0.2"); err != nil {
		t.Fatal(err)
	}

	// An address the Node does not report is refused, and the file stays.
	names = []net.IP{net.ParseIP("192.0.2.1")}
	before := leafOf(t, file)
	if _, err := m.Ensure(ctx); err == nil || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("Ensure for a foreign IP: %v, want a refusal naming it", err)
	}
	if !leafOf(t, file).Equal(before) {
		t.Fatal("a refused request replaced the certificate")
	}
}

func leafOf(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(file, file)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}
