package apiserver

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// User is who made a request: the verified client certificate's common name and
// organizations, as Kubernetes' x509 authenticator reads them.
type User struct {
	Name   string
	Groups []string
}

type userKey struct{}

func userFrom(ctx context.Context) User {
	u, _ := ctx.Value(userKey{}).(User)
	return u
}

// WithClientCertAuth refuses requests that did not present a client certificate the TLS
// layer verified against the cluster CA, and records the user for the handler. The TLS
// listener already requires such a certificate; this guards against a handler mounted
// behind a listener configured otherwise.
func WithClientCertAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS == nil || len(req.TLS.VerifiedChains) == 0 || len(req.TLS.VerifiedChains[0]) == 0 {
			writeError(w, apierrors.NewUnauthorized("a client certificate signed by the cluster CA is required"))
			return
		}
		leaf := req.TLS.VerifiedChains[0][0]
		u := User{Name: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}
		if u.Name == "" {
			writeError(w, apierrors.NewUnauthorized("the client certificate has no common name"))
			return
		}
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), userKey{}, u)))
	})
}

func schemaGroupResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// schemaGR shortens the group-resource type in signatures.
type schemaGR = schema.GroupResource
