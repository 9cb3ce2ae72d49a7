package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plinth/plinth/control/pki"
)

// IssueNodeCredentials writes a kubeconfig for node name, signed by the CA in dataDir,
// pointing at server. It refuses to create a CA: the control service must have started
// once in dataDir, or nodes would get credentials nobody trusts.
func IssueNodeCredentials(dataDir, name, server, out string) error {
	user, err := pki.NodeUser(name)
	if err != nil {
		return err
	}
	pkiDir := filepath.Join(dataDir, "pki")
	if _, err := os.Stat(filepath.Join(pkiDir, "ca.crt")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no cluster CA in %s: start plinth-control with --data-dir %s first", pkiDir, dataDir)
	}
	authority, err := pki.LoadOrCreate(pkiDir, pki.Options{})
	if err != nil {
		return err
	}
	return authority.WriteClientKubeconfig(out, server, user, []string{pki.NodeGroup})
}
