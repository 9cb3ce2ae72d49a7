package controlclient

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// writeFileAtomic replaces path with data so that a crash, or a concurrent reader,
// sees either the old content or the new, never a mix. The file has exactly mode.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: create directory: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// Before writing, so the key is never readable under a looser mode.
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: set mode %v: %w", path, mode, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: open directory for fsync: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync directory: %w", path, err)
	}
	return nil
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
