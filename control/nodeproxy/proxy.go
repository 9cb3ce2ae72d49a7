package nodeproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/plinth/plinth/control/apiserver"
)

// NodeGetter reads a Node.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// Config wires a Proxy.
type Config struct {
	Nodes NodeGetter
	// CA verifies nodes' serving certificates: the cluster CA.
	CA *x509.Certificate
	// ClientCertificate is the control service's identity towards nodes (in
	// system:masters, as kube-apiserver's kubelet client).
	ClientCertificate tls.Certificate
	Logger            *slog.Logger
}

// Proxy forwards requests to nodes.
type Proxy struct {
	cfg       Config
	transport *http.Transport
}

// New returns a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Nodes == nil || cfg.CA == nil || len(cfg.ClientCertificate.Certificate) == 0 {
		return nil, errors.New("node proxy: Nodes, CA and ClientCertificate are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cfg.CA)
	return &Proxy{cfg: cfg, transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, RootCAs: roots,
			Certificates: []tls.Certificate{cfg.ClientCertificate},
		},
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
	}}, nil
}

// Close drops idle connections.
func (p *Proxy) Close() { p.transport.CloseIdleConnections() }

// NodeAddress is where a node's API listens: its first InternalIP and the port it
// reports in daemonEndpoints.
func NodeAddress(n *corev1.Node) (string, error) {
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return "", fmt.Errorf("node %s reports no API port (status.daemonEndpoints.kubeletEndpoint.port)", n.Name)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && net.ParseIP(a.Address) != nil {
			return net.JoinHostPort(a.Address, strconv.Itoa(int(port))), nil
		}
	}
	return "", fmt.Errorf("node %s reports no InternalIP address in status.addresses", n.Name)
}

// ProxyContainerLogs implements registry.NodeLogProxy.
func (p *Proxy) ProxyContainerLogs(w http.ResponseWriter, req *http.Request, nodeName, namespace, pod, container string, query url.Values) {
	node, err := p.cfg.Nodes(req.Context(), nodeName)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	addr, err := NodeAddress(node)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	u := url.URL{Scheme: "https", Host: addr,
		Path:     "/containerLogs/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container),
		RawQuery: query.Encode()}
	out, err := http.NewRequestWithContext(req.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		apiserver.WriteError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s API at %s: %v", nodeName, addr, err)))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		apiserver.WriteError(w, statusFromNode(resp.StatusCode, nodeName, string(body)))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			if rerr != io.EOF && req.Context().Err() == nil {
				p.cfg.Logger.Warn("container log stream from node ended", "node", nodeName, "pod", namespace+"/"+pod, "err", rerr)
			}
			return
		}
	}
}

// statusFromNode turns a node's refusal into an API error with its message.
func statusFromNode(code int, node, body string) error {
	msg := fmt.Sprintf("node %s: %s", node, body)
	switch code {
	case http.StatusNotFound:
		e := apierrors.NewNotFound(corev1.Resource("pods/log"), "")
		e.ErrStatus.Message = msg
		return e
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(msg)
	}
	return apierrors.NewInternalError(errors.New(msg))
}
