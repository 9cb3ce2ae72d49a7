package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
)

// ClientCertAuthenticator reads the user from a client certificate the TLS layer
// verified against the cluster CA: common name is the user, organizations the groups.
type ClientCertAuthenticator struct{}

// Authenticate implements Authenticator.
func (ClientCertAuthenticator) Authenticate(req *http.Request) (User, bool, error) {
	if req.TLS == nil || len(req.TLS.VerifiedChains) == 0 || len(req.TLS.VerifiedChains[0]) == 0 {
		return User{}, false, nil
	}
	leaf := req.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return User{}, false, errors.New("the client certificate has no common name")
	}
	return certUser(leaf), true, nil
}

func certUser(c *x509.Certificate) User {
	return User{Name: c.Subject.CommonName, Groups: append([]string(nil), c.Subject.Organization...)}
}

// authenticate finds the user or answers 401. It returns the request carrying the user.
func (s *Server) authenticate(w http.ResponseWriter, req *http.Request) (*http.Request, bool) {
	for _, a := range s.cfg.Authenticators {
		u, ok, err := a.Authenticate(req)
		if err != nil {
			writeError(w, apierrors.NewUnauthorized(err.Error()))
			return nil, false
		}
		if ok {
			u.Groups = appendUnique(u.Groups, "system:authenticated")
			return req.WithContext(context.WithValue(req.Context(), userKey{}, u)), true
		}
	}
	if isPublicInfo(req) {
		// Load balancers and supervisors probe health without credentials, as
		// kube-apiserver lets them.
		u := User{Name: anonymousUser, Groups: []string{unauthenticatedGroup}}
		return req.WithContext(context.WithValue(req.Context(), userKey{}, u)), true
	}
	writeError(w, apierrors.NewUnauthorized("no credentials: present a client certificate signed by the cluster CA or a bootstrap token"))
	return nil, false
}

// anonymousUser and unauthenticatedGroup name a request without credentials, which
// only the public information paths accept.
const (
	anonymousUser        = "system:anonymous"
	unauthenticatedGroup = "system:unauthenticated"
)

// isPublicInfo reports whether req reads what anyone may read without credentials:
// the health endpoints. Unlike kube-apiserver's system:public-info-viewer, /version
// stays closed: a probe needs no version, and the version tells an attacker which
// flaws to try.
func isPublicInfo(req *http.Request) bool {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	return isHealthPath(req.URL.Path)
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

type attributesKey struct{}

// RequestAttributes returns the attributes of the request being served, for hooks and
// actions.
func RequestAttributes(ctx context.Context) (Attributes, bool) {
	a, ok := ctx.Value(attributesKey{}).(Attributes)
	return a, ok
}

// UserFrom returns the authenticated user of a request context.
func UserFrom(ctx context.Context) User { return userFrom(ctx) }

// WithUser returns ctx carrying u, for tests of hooks and admission.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

func (s *Server) authorize(w http.ResponseWriter, req *http.Request, a Attributes) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	a.User = userFrom(req.Context())
	allowed, reason := s.cfg.Authorizer.Authorize(req.Context(), a)
	if allowed {
		return true
	}
	msg := "user " + strings.TrimSpace(a.User.Name) + " may not " + a.Verb + " "
	switch {
	case a.ResourceRequest():
		msg += resourceName(a)
	default:
		msg += "path " + a.Path
	}
	if reason != "" {
		msg += ": " + reason
	}
	writeError(w, &apierrors.StatusError{ErrStatus: forbiddenStatus(a, msg)})
	return false
}

func resourceName(a Attributes) string {
	s := a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		s += " in namespace " + a.Namespace
	}
	return s
}

func nonResourceAttributes(req *http.Request) Attributes {
	return Attributes{User: userFrom(req.Context()), Verb: strings.ToLower(req.Method), Path: req.URL.Path}
}

func resourceAttributes(req *http.Request, r *Resource, info requestInfo) Attributes {
	a := Attributes{
		User: userFrom(req.Context()), Group: r.GroupVersion.Group, Resource: r.Plural,
		Subresource: info.subresource, Namespace: info.namespace, Name: info.name,
	}
	q := req.URL.Query()
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case info.name != "":
			a.Verb = "get"
		case isTrue(q.Get("watch")):
			a.Verb = "watch"
		default:
			a.Verb = "list"
		}
		if a.Verb != "get" {
			a.Name = nameFromFieldSelector(q.Get("fieldSelector"))
		}
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		a.Verb = "delete"
		if info.name == "" {
			a.Verb = "deletecollection"
		}
	default:
		a.Verb = strings.ToLower(req.Method)
	}
	return a
}

// nameFromFieldSelector is the object a list or watch is limited to by a field selector
// requiring metadata.name=NAME, or "". Authorizers may then treat the request as one
// about that object, as Kubernetes does: kubelet reads each Secret and ConfigMap its
// pods use through a list and watch of that one name.
func nameFromFieldSelector(selector string) string {
	if selector == "" {
		return ""
	}
	fs, err := fields.ParseSelector(selector)
	if err != nil {
		return "" // the list itself refuses the selector
	}
	name, ok := fs.RequiresExactMatch("metadata.name")
	if !ok || len(path.IsValidPathSegmentName(name)) > 0 {
		return ""
	}
	return name
}
