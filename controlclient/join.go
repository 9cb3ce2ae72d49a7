package controlclient

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth/authapi"
)

// Defaults of plinthctl join.
const (
	DefaultKubeconfig = "/etc/plinth/kubeconfig"
	DefaultCertDir    = "/var/lib/plinth/pki"
)

// JoinOptions are plinthctl join's flags.
type JoinOptions struct {
	// Server is the control service's URL, https://HOST:PORT.
	Server string
	// Token is a bootstrap token, ID.SECRET.
	Token string
	// CACertHash pins the cluster CA: sha256:<hex of its SubjectPublicKeyInfo>.
	CACertHash string
	// NodeName defaults to the lower-cased hostname, as plinthd's does.
	NodeName string
	// Kubeconfig is where plinthd's kubeconfig is written.
	Kubeconfig string
	// CertDir receives the node's certificate and key (one file) and the CA.
	CertDir string

	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// JoinResult says what Join wrote.
type JoinResult struct {
	NodeName   string
	Kubeconfig string
	CertFile   string
	NotAfter   time.Time
}

// Join obtains the node's client certificate with a bootstrap token and writes plinthd's
// kubeconfig. Every argument is checked before anything is sent; the server is verified
// against the pinned CA before the token is sent; the private key is generated here and
// never leaves the node. Nothing is written unless the certificate was issued and
// checked.
func Join(ctx context.Context, o JoinOptions) (JoinResult, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Kubeconfig == "" {
		o.Kubeconfig = DefaultKubeconfig
	}
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir
	}
	host, err := serverHost(o.Server)
	if err != nil {
		return JoinResult{}, err
	}
	token, err := authapi.ParseToken(o.Token)
	if err != nil {
		return JoinResult{}, fmt.Errorf("--token: %w", err)
	}
	pin, err := authapi.ParseCACertHash(o.CACertHash)
	if err != nil {
		return JoinResult{}, fmt.Errorf("--ca-cert-hash: %w", err)
	}
	name, err := nodeName(o.NodeName)
	if err != nil {
		return JoinResult{}, err
	}

	key, csr, err := newKeyAndCSR(name)
	if err != nil {
		return JoinResult{}, err
	}
	pinned := &pinnedCA{pin: pin, host: host, now: o.Clock.Now}
	transport := &http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSClientConfig: pinned.tlsConfig(), ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	defer transport.CloseIdleConnections()
	o.Logger.Info("requesting a client certificate", "server", o.Server, "node", name, "token", token.ID)
	certPEM, err := requestCertificate(ctx, &http.Client{Transport: transport}, o.Server, csr, "", func(req *http.Request) {
		req.Header.Set("Authorization", "Bearer "+token.String())
	})
	if err != nil {
		return JoinResult{}, err
	}
	ca := pinned.verified()
	if ca == nil {
		return JoinResult{}, errors.New("internal error: the connection was not verified against the pinned CA")
	}
	cert, combined, err := checkIssued(certPEM, key, name, ca, o.Clock.Now())
	if err != nil {
		return JoinResult{}, err
	}

	certFile := filepath.Join(o.CertDir, ClientCertFileName)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return JoinResult{}, fmt.Errorf("--cert-dir %s: %w", o.CertDir, err)
	}
	if err := writeFileAtomic(filepath.Join(o.CertDir, CAFileName), caPEM, 0o644); err != nil {
		return JoinResult{}, err
	}
	if err := writeFileAtomic(certFile, combined, 0o600); err != nil {
		return JoinResult{}, err
	}
	// Last, so the kubeconfig never names files that are not there yet.
	if err := writeKubeconfig(o.Kubeconfig, o.Server, caPEM, certFile, cert.Subject.CommonName); err != nil {
		return JoinResult{}, err
	}
	o.Logger.Info("joined", "node", name, "kubeconfig", o.Kubeconfig, "certificate", certFile, "notAfter", cert.NotAfter)
	return JoinResult{NodeName: name, Kubeconfig: o.Kubeconfig, CertFile: certFile, NotAfter: cert.NotAfter}, nil
}

// serverHost checks --server and returns the host name the serving certificate must
// cover.
func serverHost(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("--server: %q is not a URL: %w", server, err)
	}
	if u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("--server: %q is not an https URL with only a host and port, like https://10.0.0.1:6443", server)
	}
	return u.Hostname(), nil
}

// nodeName returns the requested name, or the lower-cased hostname, checked to be a
// valid Node name (a DNS-1123 subdomain).
func nodeName(requested string) (string, error) {
	name, source := strings.TrimSpace(requested), "--node-name"
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: reading the hostname (or pass --node-name): %w", err)
		}
		name, source = strings.ToLower(h), "the hostname"
	}
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		return "", fmt.Errorf("node name %q from %s is not a valid Node name: %s", name, source, strings.Join(problems, "; "))
	}
	return name, nil
}
