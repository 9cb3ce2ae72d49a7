package service

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/auth"
	"github.com/plinth/plinth/control/pki"
	"github.com/plinth/plinth/control/storage"
)

// tokenGCInterval is how often expired bootstrap tokens are removed. Expired tokens are
// refused at once; collection only keeps them out of etcd and `token list`.
const tokenGCInterval = time.Minute

// authWiring is authentication, authorization, admission and the Plinth endpoints
// (bootstrap tokens, node certificate signing), built once for the API server and the
// handler beside it so both admit exactly the same users.
type authWiring struct {
	authenticators []apiserver.Authenticator
	authorizer     *auth.Authorizer
	admission      *auth.NodeRestriction
	tokens         *auth.TokenStore
	handler        *auth.Handler
	podIndex       *auth.PodIndex // nil until bindPodIndex
}

func newAuthWiring(o Options, store *storage.Store, signer *pki.Authority, logger *slog.Logger) (*authWiring, error) {
	tokens := auth.NewTokenStore(store, nil, logger.With("component", "bootstraptokens"))
	w := &authWiring{
		// Certificates first: a client presenting both a certificate and a token is
		// the certificate's user.
		authenticators: []apiserver.Authenticator{auth.CertificateAuthenticator{}, auth.TokenAuthenticator{Tokens: tokens}},
		authorizer:     &auth.Authorizer{},
		admission:      &auth.NodeRestriction{},
		tokens:         tokens,
	}
	var err error
	w.handler, err = auth.NewHandler(auth.HandlerConfig{
		Authenticators: w.authenticators, Authorizer: w.authorizer, Tokens: tokens, Signer: signer,
		NodeCertValidity: o.NodeCertValidity, Logger: logger.With("component", "nodecertificates"),
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// bindPods lets NodeRestriction look up the pods that nodes' events are about and the
// Nodes that mirror pods name as owners, and the authorizer read the pods bound to a
// node live (whose Secrets and ConfigMaps it may read), once the API server (which
// reads them) exists and before it serves. Without a pods resource, nodes may not write
// events about pods; without a nodes resource, they may not create mirror pods with
// owner references.
func (w *authWiring) bindPods(api *apiserver.Server, reg *apiserver.Registry) {
	if pods, ok := reg.Lookup(schema.GroupVersion{Version: "v1"}, "pods"); ok {
		w.admission.Pods = auth.ObjectsPodGetter(api.Objects(pods))
		w.authorizer.LivePods = auth.ObjectsNodePods(api.Objects(pods))
	}
	if nodes, ok := reg.Lookup(schema.GroupVersion{Version: "v1"}, "nodes"); ok {
		w.admission.Nodes = auth.ObjectsNodeGetter(api.Objects(nodes))
	}
}

// bindPodIndex gives the authorizer its cache of pods by node, fed through client (the
// loopback client); it must run before the API serves, which then reads it. Until the
// cache has synced, and whenever it finds no referencing pod, the authorizer reads the
// pods live.
func (w *authWiring) bindPodIndex(client kubernetes.Interface) error {
	idx, err := auth.NewPodIndex(client)
	if err != nil {
		return err
	}
	w.podIndex = idx
	w.authorizer.Pods = idx
	return nil
}

// runPodIndex fills and follows the pod cache until ctx is done.
func (w *authWiring) runPodIndex(ctx context.Context) {
	if w.podIndex != nil {
		w.podIndex.Run(ctx)
	}
}

// handler puts the Plinth endpoints beside the API.
func (w *authWiring) wrap(api http.Handler) http.Handler { return auth.Mount(api, w.handler) }

// runTokenGC removes expired bootstrap tokens until ctx is done.
func (w *authWiring) runTokenGC(ctx context.Context) {
	w.tokens.RunGarbageCollector(ctx, tokenGCInterval, clock.RealClock{})
}

// servingTLSConfig is the authority's TLS configuration with two changes for node join:
// client certificates are verified when given rather than required, so a joining node
// can present a bootstrap token instead (the API still answers 401 to anyone without
// valid credentials); and the CA certificate follows the serving certificate in the
// chain, so `plinthctl join` can find the CA whose hash it pins without trusting anyone.
func servingTLSConfig(authority *pki.Authority) (*tls.Config, error) {
	tc := authority.ServerTLSConfig()
	tc.ClientAuth = tls.VerifyClientCertIfGiven
	block, _ := pem.Decode(authority.CAPEM())
	if block == nil || len(tc.Certificates) != 1 {
		return nil, errors.New("serving TLS: the authority has no CA certificate or not exactly one serving certificate")
	}
	chained := tc.Certificates[0]
	chained.Certificate = append(append([][]byte(nil), chained.Certificate...), block.Bytes)
	tc.Certificates = []tls.Certificate{chained}
	return tc, nil
}
