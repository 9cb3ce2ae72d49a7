package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
)

// DefaultNodeCertValidity is how long a node's client certificate is valid, as kubelet's
// client certificates signed by kube-controller-manager by default.
const DefaultNodeCertValidity = 365 * 24 * time.Hour

// maxRequestBytes bounds request bodies: a CSR or a token request is a few KiB at most.
const maxRequestBytes = 64 << 10

// HandlerConfig wires a Handler.
type HandlerConfig struct {
	// Authenticators and Authorizer are the API server's own, so these endpoints
	// admit exactly whom the API does.
	Authenticators []apiserver.Authenticator
	Authorizer     apiserver.Authorizer
	Tokens         *TokenStore
	Signer         ClientCertificateSigner
	// NodeCertValidity is the lifetime of signed node certificates; 0 means
	// DefaultNodeCertValidity.
	NodeCertValidity time.Duration
	// Nodes reads a Node, whose addresses bound the names of its serving
	// certificate; nil refuses serving certificates.
	Nodes  func(ctx context.Context, name string) (*corev1.Node, error)
	Logger *slog.Logger
}

// Handler serves the Plinth endpoints under /apis/plinth.dev/v1: bootstrap tokens
// (list, create, delete; administrators) and node certificate requests (bootstrappers
// joining, nodes renewing their own). It authenticates and authorizes every request
// itself, with the API server's authenticators and authorizer.
type Handler struct {
	cfg HandlerConfig
}

// NewHandler checks cfg and returns a Handler.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Tokens == nil || cfg.Signer == nil || cfg.Authorizer == nil || len(cfg.Authenticators) == 0 {
		return nil, errors.New("auth handler: Authenticators, Authorizer, Tokens and Signer are required")
	}
	if cfg.NodeCertValidity < 0 {
		return nil, fmt.Errorf("--node-cert-validity: %v is negative: want a positive duration", cfg.NodeCertValidity)
	}
	if cfg.NodeCertValidity == 0 {
		cfg.NodeCertValidity = DefaultNodeCertValidity
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}, nil
}

// Mount returns a handler that serves the Plinth endpoints with h and everything else
// with api.
func Mount(api http.Handler, h *Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, authapi.PathPrefix) {
			h.ServeHTTP(w, req)
			return
		}
		api.ServeHTTP(w, req)
	})
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	user, err := authenticate(h.cfg.Authenticators, req)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewUnauthorized(err.Error()))
		return
	}
	ctx := apiserver.WithUser(req.Context(), user)
	resource, name, ok := splitPath(req.URL.Path)
	if !ok {
		apiserver.WriteError(w, notFound(req.URL.Path))
		return
	}
	attrs := apiserver.Attributes{User: user, Verb: verbOf(req.Method, name), Group: authapi.Group, Resource: resource, Name: name}
	if allowed, reason := h.cfg.Authorizer.Authorize(ctx, attrs); !allowed {
		apiserver.WriteError(w, forbidden(attrs, reason))
		return
	}
	switch {
	case resource == authapi.BootstrapTokensResource && name == "" && attrs.Verb == "list":
		h.listTokens(ctx, w)
	case resource == authapi.BootstrapTokensResource && name == "" && attrs.Verb == "create":
		h.createToken(ctx, w, req)
	case resource == authapi.BootstrapTokensResource && name != "" && attrs.Verb == "delete":
		h.deleteToken(ctx, w, name)
	case resource == authapi.NodeCertificateRequestsResource && name == "" && attrs.Verb == "create":
		h.signNodeCertificate(ctx, w, req, user)
	default:
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: authapi.Group, Resource: resource}, attrs.Verb))
	}
}

// splitPath reads /apis/plinth.dev/v1/RESOURCE[/NAME].
func splitPath(path string) (resource, name string, ok bool) {
	rest, found := strings.CutPrefix(path, authapi.PathPrefix)
	if !found {
		return "", "", false
	}
	resource, name, _ = strings.Cut(rest, "/")
	switch resource {
	case authapi.BootstrapTokensResource, authapi.NodeCertificateRequestsResource:
	default:
		return "", "", false
	}
	return resource, name, !strings.Contains(name, "/")
}

func verbOf(method, name string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		if name == "" {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodDelete:
		return "delete"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	}
	return strings.ToLower(method)
}

func (h *Handler) listTokens(ctx context.Context, w http.ResponseWriter) {
	tokens, err := h.cfg.Tokens.List(ctx)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, authapi.BootstrapTokenList{
		TypeMeta: authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindBootstrapTokenList}, Items: tokens,
	})
}

func (h *Handler) createToken(ctx context.Context, w http.ResponseWriter, req *http.Request) {
	var in authapi.BootstrapTokenRequest
	if err := decodeBody(req, &in, authapi.KindBootstrapTokenRequest); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if in.TTLSeconds < 0 || in.TTLSeconds > int64(time.Duration(1<<62)/time.Second) {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("ttlSeconds: %d is out of range: want 0 (never expires) or a positive number of seconds", in.TTLSeconds)))
		return
	}
	tok, err := h.cfg.Tokens.Create(ctx, time.Duration(in.TTLSeconds)*time.Second, in.Description)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	apiserver.WriteJSON(w, http.StatusCreated, tok)
}

func (h *Handler) deleteToken(ctx context.Context, w http.ResponseWriter, id string) {
	if err := authapi.ValidateTokenID(id); err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	err := h.cfg.Tokens.Delete(ctx, id)
	if errors.Is(err, ErrTokenNotFound) {
		apiserver.WriteError(w, apierrors.NewNotFound(schema.GroupResource{Group: authapi.Group, Resource: authapi.BootstrapTokensResource}, id))
		return
	}
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusOK,
		Details: &metav1.StatusDetails{Name: id, Group: authapi.Group, Kind: authapi.BootstrapTokensResource},
	})
}

func (h *Handler) signNodeCertificate(ctx context.Context, w http.ResponseWriter, req *http.Request, user apiserver.User) {
	var in authapi.NodeCertificateRequest
	if err := decodeBody(req, &in, authapi.KindNodeCertificateRequest); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if in.Certificate != "" || in.CACertificate != "" {
		apiserver.WriteError(w, apierrors.NewBadRequest("certificate and caCertificate are set by the server: send only request"))
		return
	}
	if in.Usage == authapi.UsageServing {
		h.signServingCertificate(ctx, w, in, user)
		return
	}
	if in.Usage != "" && in.Usage != authapi.UsageClient {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("usage: %q is neither %s nor %s", in.Usage, authapi.UsageClient, authapi.UsageServing)))
		return
	}
	csr, node, err := ParseNodeCSR([]byte(in.Request))
	if err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	// Bootstrappers and administrators may have any node certified; a node only itself.
	if self, isNode := nodeNameOf(user); isNode && self != node {
		attrs := apiserver.Attributes{User: user, Verb: "create", Group: authapi.Group, Resource: authapi.NodeCertificateRequestsResource}
		apiserver.WriteError(w, forbidden(attrs, fmt.Sprintf("node %s may only renew its own certificate, not request one for node %s", self, node)))
		return
	}
	certPEM, err := h.cfg.Signer.SignClientCertificate(csr.PublicKey, csr.Subject.CommonName, []string{authapi.NodesGroup}, h.cfg.NodeCertValidity)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	h.cfg.Logger.Info("signed node client certificate", "node", node, "requester", user.Name, "validity", h.cfg.NodeCertValidity)
	apiserver.WriteJSON(w, http.StatusCreated, authapi.NodeCertificateRequest{
		TypeMeta: authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindNodeCertificateRequest},
		Request:  in.Request, Certificate: string(certPEM), CACertificate: string(h.cfg.Signer.CAPEM()),
	})
}

// signServingCertificate signs a node's serving certificate, as kube-controller-manager's
// kubelet-serving approver would approve it and more strictly: only the node itself (or
// an administrator) may ask, and only for names its Node object reports.
func (h *Handler) signServingCertificate(ctx context.Context, w http.ResponseWriter, in authapi.NodeCertificateRequest, user apiserver.User) {
	csr, node, err := ParseNodeServingCSR([]byte(in.Request))
	if err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	attrs := apiserver.Attributes{User: user, Verb: "create", Group: authapi.Group, Resource: authapi.NodeCertificateRequestsResource}
	self, isNode := nodeNameOf(user)
	switch {
	case isNode && self != node:
		apiserver.WriteError(w, forbidden(attrs, fmt.Sprintf("node %s may only request its own serving certificate, not one for node %s", self, node)))
		return
	case !isNode && !user.InGroup(mastersGroup):
		apiserver.WriteError(w, forbidden(attrs, "only a node itself or an administrator may request a node serving certificate"))
		return
	case h.cfg.Nodes == nil:
		apiserver.WriteError(w, apierrors.NewServiceUnavailable("this control service does not sign node serving certificates"))
		return
	}
	n, err := h.cfg.Nodes(ctx, node)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	if err := CheckServingNames(n, csr.DNSNames, csr.IPAddresses); err != nil {
		apiserver.WriteError(w, forbidden(attrs, err.Error()))
		return
	}
	certPEM, err := h.cfg.Signer.SignServingCertificate(csr.PublicKey, csr.Subject.CommonName, []string{authapi.NodesGroup},
		csr.DNSNames, csr.IPAddresses, h.cfg.NodeCertValidity)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	h.cfg.Logger.Info("signed node serving certificate", "node", node, "requester", user.Name,
		"dnsNames", csr.DNSNames, "ips", csr.IPAddresses, "validity", h.cfg.NodeCertValidity)
	apiserver.WriteJSON(w, http.StatusCreated, authapi.NodeCertificateRequest{
		TypeMeta: authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindNodeCertificateRequest},
		Request:  in.Request, Usage: authapi.UsageServing, Certificate: string(certPEM), CACertificate: string(h.cfg.Signer.CAPEM()),
	})
}

// decodeBody reads a JSON body of the given kind strictly: unknown fields are refused,
// so a typo does not silently turn into a default.
func decodeBody(req *http.Request, into any, kind string) error {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBytes+1))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("reading the body: %v", err))
	}
	if len(body) > maxRequestBytes {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the body is larger than %d bytes", maxRequestBytes))
	}
	return decodeJSON(body, into, kind)
}

func decodeJSON(body []byte, into any, kind string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", kind, err))
	}
	if dec.More() {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding %s: unexpected data after the object", kind))
	}
	var tm authapi.TypeMeta
	switch v := into.(type) {
	case *authapi.BootstrapTokenRequest:
		tm = v.TypeMeta
	case *authapi.NodeCertificateRequest:
		tm = v.TypeMeta
	}
	if (tm.Kind != "" && tm.Kind != kind) || (tm.APIVersion != "" && tm.APIVersion != authapi.APIVersion) {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is a %s %s, want %s %s", tm.APIVersion, tm.Kind, authapi.APIVersion, kind))
	}
	return nil
}

func forbidden(a apiserver.Attributes, reason string) error {
	msg := fmt.Sprintf("user %s may not %s %s.%s", a.User.Name, a.Verb, a.Resource, a.Group)
	if a.Name != "" {
		msg += " " + a.Name
	}
	if reason != "" {
		msg += ": " + reason
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: msg,
		Details: &metav1.StatusDetails{Name: a.Name, Group: a.Group, Kind: a.Resource},
	}}
}

func notFound(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server could not find the requested resource (%s)", path),
	}}
}
