package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth/authapi"
)

// CertificateAuthenticator is apiserver.ClientCertAuthenticator that also checks the
// certificate's validity period on every request. The TLS layer checks it only at the
// handshake, and an HTTP/2 connection can outlive the certificate it was opened with:
// without this check a node whose certificate expired would keep its access for as long
// as it keeps the connection open.
type CertificateAuthenticator struct {
	Clock clock.PassiveClock
}

// Authenticate implements apiserver.Authenticator.
func (a CertificateAuthenticator) Authenticate(req *http.Request) (apiserver.User, bool, error) {
	u, ok, err := apiserver.ClientCertAuthenticator{}.Authenticate(req)
	if !ok || err != nil {
		return u, ok, err
	}
	leaf := req.TLS.VerifiedChains[0][0]
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock.Now()
	}
	switch {
	case now.After(leaf.NotAfter):
		return apiserver.User{}, false, fmt.Errorf("the client certificate of %s expired at %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return apiserver.User{}, false, fmt.Errorf("the client certificate of %s is not valid before %s", leaf.Subject.CommonName, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return u, true, nil
}

// TokenChecker verifies a bootstrap token; *TokenStore is one.
type TokenChecker interface {
	Check(ctx context.Context, tok authapi.Token) error
}

// TokenAuthenticator accepts "Authorization: Bearer ID.SECRET" with a valid bootstrap
// token as user system:bootstrap:<ID> in group system:bootstrappers.
type TokenAuthenticator struct {
	Tokens TokenChecker
}

// Authenticate implements apiserver.Authenticator. A request without a bearer token is
// not its business; a bearer token that is malformed, unknown, wrong, deleted or expired
// is an error, which the API answers with 401.
func (a TokenAuthenticator) Authenticate(req *http.Request) (apiserver.User, bool, error) {
	raw, ok, err := authapi.BearerToken(req.Header.Get("Authorization"))
	if !ok {
		return apiserver.User{}, false, nil
	}
	if err != nil {
		return apiserver.User{}, false, err
	}
	tok, err := authapi.ParseToken(raw)
	if err != nil {
		return apiserver.User{}, false, fmt.Errorf("the bearer token is not a bootstrap token: %w", err)
	}
	if err := a.Tokens.Check(req.Context(), tok); err != nil {
		if errors.Is(err, ErrTokenNotFound) || errors.Is(err, ErrTokenInvalid) || errors.Is(err, ErrTokenExpired) {
			return apiserver.User{}, false, err
		}
		// A storage failure is not the client's fault, but the request still cannot
		// be authenticated; say so instead of blaming the token.
		return apiserver.User{}, false, fmt.Errorf("bootstrap token %s could not be checked: %w", tok.ID, err)
	}
	return apiserver.User{Name: authapi.BootstrapUserPrefix + tok.ID, Groups: []string{authapi.BootstrappersGroup}}, true, nil
}

// authenticate runs authenticators as apiserver.Server does, for the Plinth endpoints
// served beside it: the first that recognises the credentials decides, an error
// refuses, and every authenticated user is in system:authenticated.
func authenticate(authenticators []apiserver.Authenticator, req *http.Request) (apiserver.User, error) {
	for _, a := range authenticators {
		u, ok, err := a.Authenticate(req)
		if err != nil {
			return apiserver.User{}, err
		}
		if ok {
			if !u.InGroup(authenticatedGroup) {
				u.Groups = append(u.Groups, authenticatedGroup)
			}
			return u, nil
		}
	}
	return apiserver.User{}, errors.New("no credentials: present a client certificate signed by the cluster CA or a bootstrap token")
}

const authenticatedGroup = "system:authenticated"
