package pki

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Identities carried in client certificates (CommonName = user, Organization = groups).
// The names follow Kubernetes so its RBAC conventions and the node authorizer's rules
// read the same here.
const (
	AdminUser   = "plinth-admin"
	AdminGroup  = "system:masters"
	NodeGroup   = "system:nodes"
	ControlUser = "system:plinth-control" // the control service's own loopback clients

	nodeUserPrefix = "system:node:"
)

// NodeUser returns the user name a node's client certificate carries,
// "system:node:<name>". name must be a valid node name: a DNS-1123 subdomain.
func NodeUser(name string) (string, error) {
	if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
		return "", fmt.Errorf("node name %q is invalid: %s", name, strings.Join(problems, "; "))
	}
	return nodeUserPrefix + name, nil
}
