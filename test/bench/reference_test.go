package bench

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth/plinth/control/pki"
)

// BenchmarkReferenceNodeFleet runs BenchmarkNodeFleet's fleet, window and stops against
// the reference control plane: etcd, kube-apiserver and kube-controller-manager, each
// its own process with its defaults except what the comparison needs (loopback
// addresses, the same CA, --node-monitor-grace-period as plinth-control is given). CPU
// time and memory are summed over the three. The binaries come from
// PLINTH_BENCH_REFERENCE_DIR; docs/benchmarks.md says how they were built from the Go
// module proxy. Without it the benchmark is skipped, saying so: nothing of Kubernetes
// is vendored into this repository.
func BenchmarkReferenceNodeFleet(b *testing.B) {
	binDir := referenceBinDir(b)
	for _, n := range fleetSizes(b) {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchFleet(b, n, referenceTarget(b, binDir)) })
	}
}

// BenchmarkReferenceLeaseUpdates is BenchmarkLeaseUpdates against the reference
// control plane that BenchmarkReferenceNodeFleet starts.
func BenchmarkReferenceLeaseUpdates(b *testing.B) {
	benchLeaseUpdates(b, referenceTarget(b, referenceBinDir(b)).admin)
}

// BenchmarkReferenceListNodes is BenchmarkListNodes against the reference control
// plane that BenchmarkReferenceNodeFleet starts.
func BenchmarkReferenceListNodes(b *testing.B) {
	benchListNodes(b, referenceTarget(b, referenceBinDir(b)).admin)
}

// referenceBinDir returns PLINTH_BENCH_REFERENCE_DIR, checked to hold the reference
// binaries, or skips the benchmark saying why.
func referenceBinDir(b *testing.B) string {
	b.Helper()
	binDir := os.Getenv("PLINTH_BENCH_REFERENCE_DIR")
	if binDir == "" {
		b.Skip("PLINTH_BENCH_REFERENCE_DIR is not set: it names a directory with etcd, kube-apiserver and kube-controller-manager (see docs/benchmarks.md)")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			b.Fatalf("PLINTH_BENCH_REFERENCE_DIR: %v", err)
		}
	}
	return binDir
}

// referenceTarget starts etcd, kube-apiserver and kube-controller-manager in a fresh
// directory and returns once the API server is ready and the controller manager leads.
func referenceTarget(b *testing.B, binDir string) *fleetTarget {
	b.Helper()
	work := b.TempDir()
	authority, err := pki.LoadOrCreate(filepath.Join(work, "pki"), pki.Options{})
	if err != nil {
		b.Fatal(err)
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(b))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(b))
	etcd := startLogged(b, filepath.Join(binDir, "etcd"), []string{
		"--name", "reference", "--data-dir", filepath.Join(work, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "reference=" + peerURL,
	}, filepath.Join(work, "etcd.log"))
	waitUntil(b, etcd, time.Minute, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	saKey, saPub := writeServiceAccountKey(b, work)
	server := fmt.Sprintf("https://127.0.0.1:%d", freePort(b))
	apiserver := startLogged(b, filepath.Join(binDir, "kube-apiserver"), []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strings.TrimPrefix(server, "https://127.0.0.1:"),
		"--cert-dir", filepath.Join(work, "apiserver-certs"),
		"--tls-cert-file", authority.ServingCertFile(), "--tls-private-key-file", authority.ServingKeyFile(),
		"--client-ca-file", authority.CAFile(),
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/12",
		// The kubernetes Service's endpoint would be the loopback address, which the
		// endpoint reconciler refuses; nothing here uses that Service.
		"--endpoint-reconciler-type", "none",
	}, filepath.Join(work, "kube-apiserver.log"))

	certPEM, keyPEM, err := authority.IssueClientCert("plinth-bench-admin", []string{"system:masters"}, 0)
	if err != nil {
		b.Fatal(err)
	}
	adminConfig := &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: authority.CAPEM(), CertData: certPEM, KeyData: keyPEM},
		QPS:             -1,
	}
	admin, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		b.Fatal(err)
	}
	waitUntil(b, apiserver, 2*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		raw, err := admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(raw) == "ok"
	})

	kubeconfig := filepath.Join(work, "admin.kubeconfig")
	writeKubeconfig(b, kubeconfig, server, authority.CAPEM(), certPEM, keyPEM)
	kcm := startLogged(b, filepath.Join(binDir, "kube-controller-manager"), []string{
		"--kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(b)),
		"--cert-dir", filepath.Join(work, "kcm-certs"),
		"--node-monitor-grace-period", fleetGrace.String(),
		"--service-account-private-key-file", saKey, "--root-ca-file", authority.CAFile(),
	}, filepath.Join(work, "kube-controller-manager.log"))
	waitUntil(b, kcm, 2*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		lease, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	return &fleetTarget{
		name:   "etcd + kube-apiserver + kube-controller-manager",
		server: server,
		processes: []targetProcess{
			{name: "etcd", pid: etcd.cmd.Process.Pid, log: etcd.log},
			{name: "kube-apiserver", pid: apiserver.cmd.Process.Pid, log: apiserver.log},
			{name: "kube-controller-manager", pid: kcm.cmd.Process.Pid, log: kcm.log},
		},
		admin:          admin,
		authority:      authority,
		leaseHistogram: "apiserver_request_duration_seconds",
		leaseSelector:  `resource="leases",scope="resource",subresource="",verb="PUT"`,
		profile: func(ctx context.Context, what string) ([]byte, error) {
			path, query, _ := strings.Cut(what, "?")
			req := admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/" + path)
			values, err := url.ParseQuery(query)
			if err != nil {
				return nil, err
			}
			for k, v := range values {
				req = req.Param(k, v[0])
			}
			return req.Timeout(2 * time.Minute).DoRaw(ctx)
		},
	}
}

// writeServiceAccountKey writes an RSA key pair for signing service account tokens,
// which kube-apiserver requires, and returns the private and public key files.
func writeServiceAccountKey(b *testing.B, dir string) (private, public string) {
	b.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	private, public = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		b.Fatal(err)
	}
	return private, public
}

// writeKubeconfig writes a kubeconfig for one user with a client certificate.
func writeKubeconfig(b *testing.B, path, server string, caPEM, certPEM, keyPEM []byte) {
	b.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["reference"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["reference"] = &clientcmdapi.Context{Cluster: "reference", AuthInfo: "admin"}
	cfg.CurrentContext = "reference"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		b.Fatal(err)
	}
}
