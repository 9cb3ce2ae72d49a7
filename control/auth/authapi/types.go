package authapi

import "time"

// The Plinth API group, served beside the Kubernetes subset on the same port.
const (
	Group      = "plinth.dev"
	Version    = "v1"
	APIVersion = Group + "/" + Version

	// BootstrapTokensResource and NodeCertificateRequestsResource are the resource
	// names authorization sees.
	BootstrapTokensResource         = "bootstraptokens"
	NodeCertificateRequestsResource = "nodecertificaterequests"

	// PathPrefix is where the group's endpoints live.
	PathPrefix = "/apis/" + Group + "/" + Version + "/"
	// BootstrapTokensPath lists (GET) and creates (POST) tokens; a token is deleted at
	// BootstrapTokensPath + "/" + ID.
	BootstrapTokensPath = PathPrefix + BootstrapTokensResource
	// NodeCertificateRequestsPath signs a node's client certificate (POST).
	NodeCertificateRequestsPath = PathPrefix + NodeCertificateRequestsResource
)

// Kinds of the bodies.
const (
	KindBootstrapToken         = "BootstrapToken"
	KindBootstrapTokenList     = "BootstrapTokenList"
	KindBootstrapTokenRequest  = "BootstrapTokenRequest"
	KindNodeCertificateRequest = "NodeCertificateRequest"
)

// Groups and user names the bootstrap and node identities carry, as in Kubernetes.
const (
	BootstrapUserPrefix = "system:bootstrap:"
	BootstrappersGroup  = "system:bootstrappers"
	NodeUserPrefix      = "system:node:"
	NodesGroup          = "system:nodes"
)

// TypeMeta names a body's kind, as Kubernetes objects do.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// BootstrapTokenRequest asks for a new bootstrap token.
type BootstrapTokenRequest struct {
	TypeMeta
	// TTLSeconds is the token's lifetime; 0 means it never expires.
	TTLSeconds  int64  `json:"ttlSeconds"`
	Description string `json:"description,omitempty"`
}

// BootstrapToken describes a stored token. Its secret is never stored nor listed:
// Token is set only in the answer to the request that created it.
type BootstrapToken struct {
	TypeMeta
	ID string `json:"id"`
	// Token is ID.SECRET, the credential a joining node presents.
	Token       string    `json:"token,omitempty"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`
	// Expires is nil for a token that never expires.
	Expires *time.Time `json:"expires,omitempty"`
}

// BootstrapTokenList is the answer to a list.
type BootstrapTokenList struct {
	TypeMeta
	Items []BootstrapToken `json:"items"`
}

// NodeCertificateRequest carries a node's certificate signing request and, in the
// answer, the signed certificate. The node's private key never leaves the node.
type NodeCertificateRequest struct {
	TypeMeta
	// Request is a PEM "CERTIFICATE REQUEST" (PKCS#10) whose subject is
	// CN=system:node:<name>, O=system:nodes. A client request carries no other names;
	// a serving request carries the node's DNS names and IP addresses as SANs.
	Request string `json:"request"`
	// Usage is UsageClient (the default when empty) or UsageServing.
	Usage string `json:"usage,omitempty"`
	// Certificate is the signed client certificate (PEM), in the answer.
	Certificate string `json:"certificate,omitempty"`
	// CACertificate is the cluster CA (PEM), in the answer.
	CACertificate string `json:"caCertificate,omitempty"`
}

// Usages of node certificates: a client certificate for talking to the control
// service, or a serving certificate for the node's API (kubelet-serving).
const (
	UsageClient  = "client"
	UsageServing = "serving"
)

// Status is the part of a Kubernetes metav1.Status error body clients read.
type Status struct {
	TypeMeta
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Code    int32  `json:"code,omitempty"`
}
