package controlclient

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth/plinth/internal/atomicfile"
)

// Files in the certificate directory.
const (
	// ClientCertFileName holds the node's client certificate followed by its private
	// key. The kubeconfig names it as both client-certificate and client-key.
	ClientCertFileName = "plinthd-client.pem"
	// CAFileName is the cluster CA that was pinned at join.
	CAFileName = "ca.crt"

	clusterName = "plinth"
)

// writeFileAtomic creates the directory (0700) if needed and replaces path atomically.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: create directory: %w", path, err)
	}
	return atomicfile.Write(path, data, mode)
}

// writeKubeconfig writes plinthd's kubeconfig: the server, the CA embedded, and the
// client certificate and key by reference to certKeyFile, so renewal can replace them
// without touching the kubeconfig.
func writeKubeconfig(path, server string, caPEM []byte, certKeyFile, user string) error {
	abs, err := filepath.Abs(certKeyFile)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: abs, ClientKey: abs}
	contextName := user + "@" + clusterName
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: encode: %w", path, err)
	}
	// The kubeconfig holds no secret, but it says where the key is: keep it private.
	return writeFileAtomic(path, data, 0o600)
}
