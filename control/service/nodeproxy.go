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

// lateNodes reads Nodes through the API server's own objects, which exist only once
// the server does; bind supplies them. Until then reads fail.
type lateNodes struct {
	objects atomic.Pointer[apiserver.Objects]
}

func (l *lateNodes) get(ctx context.Context, name string) (*corev1.Node, error) {
	objs := l.objects.Load()
	if objs == nil {
		return nil, errors.New("the API server is not serving nodes yet")
	}
	obj, err := (*objs).Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

func (l *lateNodes) bind(api *apiserver.Server, reg *apiserver.Registry) {
	if r, ok := reg.Lookup(schema.GroupVersion{Version: "v1"}, "nodes"); ok {
		objs := api.Objects(r)
		l.objects.Store(&objs)
	}
}

// newNodeProxy builds the pods/log proxy with a client certificate of its own.
func newNodeProxy(authority *pki.Authority, nodes *lateNodes, logger *slog.Logger) (*nodeproxy.Proxy, error) {
	certPEM, keyPEM, err := authority.IssueClientCert(nodeClientUser, []string{pki.AdminGroup}, 0)
	if err != nil {
		return nil, fmt.Errorf("node client certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("node client certificate: %w", err)
	}
	return nodeproxy.New(nodeproxy.Config{
		CA: authority.CACertificate(), ClientCertificate: pair, Logger: logger, Nodes: nodes.get,
	})
}
