package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/nodeproxy"
	"github.com/plinth/plinth/control/pki"
)

// nodeClientUser is the control service's identity towards nodes' APIs; it is in
// system:masters, as kube-apiserver's kubelet client is.
const nodeClientUser = pki.ControlUser + ":node-client"

// newNodeProxy builds the pods/log proxy. The Node reads go through the API server's
// own objects, which exist only once the server does: bindNodes supplies them.
func newNodeProxy(authority *pki.Authority, logger *slog.Logger) (*nodeproxy.Proxy, func(*apiserver.Server, *apiserver.Registry), error) {
	certPEM, keyPEM, err := authority.IssueClientCert(nodeClientUser, []string{pki.AdminGroup}, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("node client certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("node client certificate: %w", err)
	}
	var nodes atomic.Pointer[apiserver.Objects]
	proxy, err := nodeproxy.New(nodeproxy.Config{
		CA: authority.CACertificate(), ClientCertificate: pair, Logger: logger,
		Nodes: func(ctx context.Context, name string) (*corev1.Node, error) {
			objs := nodes.Load()
			if objs == nil {
				return nil, errors.New("the API server is not serving nodes yet")
			}
			obj, err := (*objs).Get(ctx, "", name)
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.Node), nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	bind := func(api *apiserver.Server, reg *apiserver.Registry) {
		if r, ok := reg.Lookup(schema.GroupVersion{Version: "v1"}, "nodes"); ok {
			objs := api.Objects(r)
			nodes.Store(&objs)
		}
	}
	return proxy, bind, nil
}
