package auth

import (
	"strings"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
)

// mastersGroup may do anything, as in Kubernetes.
const mastersGroup = "system:masters"

// nodeLeaseNamespace holds the nodes' heartbeat Leases.
const nodeLeaseNamespace = "kube-node-lease"

// nodeNameOf returns the node a user is, following Kubernetes' node authorizer: the
// name is system:node:<name> and the user is in system:nodes. Either alone is not a
// node (a certificate with the name but without the group gets nothing).
func nodeNameOf(u apiserver.User) (string, bool) {
	name, ok := strings.CutPrefix(u.Name, authapi.NodeUserPrefix)
	if !ok || name == "" || !u.InGroup(authapi.NodesGroup) {
		return "", false
	}
	return name, true
}

// isBootstrapper reports whether u authenticated with a bootstrap token.
func isBootstrapper(u apiserver.User) bool {
	return strings.HasPrefix(u.Name, authapi.BootstrapUserPrefix) && u.InGroup(authapi.BootstrappersGroup)
}
