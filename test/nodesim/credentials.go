package nodesim

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/plinth/plinth/control/pki"
)

// Credentials returns the client configuration a simulated node connects with. It is
// called once per node; the configuration must not be shared between nodes.
type Credentials func(nodeName string) (*rest.Config, error)

// AuthorityCredentials issues each node an in-memory client certificate for
// system:node:<name> in the nodes group, signed by the cluster CA, as `plinth-control
// issue-node-credentials` would write to a file; so the node authorizer treats every
// simulated node as that node and nothing more.
func AuthorityCredentials(authority *pki.Authority, server string) Credentials {
	return func(nodeName string) (*rest.Config, error) {
		user, err := pki.NodeUser(nodeName)
		if err != nil {
			return nil, err
		}
		cert, key, err := authority.IssueClientCert(user, []string{pki.NodeGroup}, 0)
		if err != nil {
			return nil, fmt.Errorf("client certificate for node %s: %w", nodeName, err)
		}
		return &rest.Config{
			Host:            server,
			TLSClientConfig: rest.TLSClientConfig{CAData: authority.CAPEM(), CertData: cert, KeyData: key},
		}, nil
	}
}

// SharedConfig gives every node a copy of one configuration (for example an
// administrator's, in tests where authorization is not the point).
func SharedConfig(cfg *rest.Config) Credentials {
	return func(string) (*rest.Config, error) { return rest.CopyConfig(cfg), nil }
}
