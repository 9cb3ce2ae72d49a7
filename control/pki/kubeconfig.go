package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/plinth/plinth/internal/atomicfile"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DefaultClusterName names the cluster in kubeconfigs written by WriteClientKubeconfig.
const DefaultClusterName = "plinth"

// Kubeconfig is what a client-certificate kubeconfig holds. The CA, certificate and key
// are embedded, so the file stands alone and can be copied to another machine.
type Kubeconfig struct {
	ClusterName string // defaults to DefaultClusterName
	Server      string // https URL of plinth-control, e.g. https://10.0.0.1:6443
	User        string // the user entry's name; conventionally the certificate's CommonName
	CAPEM       []byte
	CertPEM     []byte
	KeyPEM      []byte
}

// WriteKubeconfig writes k to path with mode 0600 (it holds a private key), atomically,
// creating the parent directory with mode 0700 when it is missing. The file has one
// cluster, one user and one context "<user>@<cluster>", which is the current context.
// Nothing is written when k is incomplete or its certificate and key do not match.
func WriteKubeconfig(path string, k Kubeconfig) error {
	cfg, err := k.toClientcmd()
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: encode: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig %s: create directory: %w", path, err)
	}
	return atomicfile.Write(path, data, keyFileMode)
}

func (k Kubeconfig) toClientcmd() (*clientcmdapi.Config, error) {
	cluster := k.ClusterName
	if cluster == "" {
		cluster = DefaultClusterName
	}
	if k.User == "" {
		return nil, errors.New("field User is empty")
	}
	u, err := url.Parse(k.Server)
	if err != nil {
		return nil, fmt.Errorf("field Server: %q is not a URL: %w", k.Server, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("field Server: %q is not an https URL with a host, like https://10.0.0.1:6443", k.Server)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(k.CAPEM) {
		return nil, errors.New("field CAPEM: no PEM certificate found")
	}
	if _, err := tls.X509KeyPair(k.CertPEM, k.KeyPEM); err != nil {
		return nil, fmt.Errorf("fields CertPEM and KeyPEM: not a usable certificate and key: %w", err)
	}

	contextName := k.User + "@" + cluster
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{
		Server:                   k.Server,
		CertificateAuthorityData: k.CAPEM,
	}
	cfg.AuthInfos[k.User] = &clientcmdapi.AuthInfo{
		ClientCertificateData: k.CertPEM,
		ClientKeyData:         k.KeyPEM,
	}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: k.User}
	cfg.CurrentContext = contextName
	return cfg, nil
}

// WriteClientKubeconfig issues a client certificate for user and groups (valid for
// LeafValidity) and writes a kubeconfig for it to path, pointing at server.
func (a *Authority) WriteClientKubeconfig(path, server, user string, groups []string) error {
	certPEM, keyPEM, err := a.IssueClientCert(user, groups, 0)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return WriteKubeconfig(path, Kubeconfig{
		ClusterName: DefaultClusterName,
		Server:      server,
		User:        user,
		CAPEM:       a.CAPEM(),
		CertPEM:     certPEM,
		KeyPEM:      keyPEM,
	})
}
