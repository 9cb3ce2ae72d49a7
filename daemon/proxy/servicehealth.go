package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// healthCheck is what one LoadBalancer Service with externalTrafficPolicy Local needs
// served on its healthCheckNodePort.
type healthCheck struct {
	port uint16
	// local is the number of local endpoints, as kube-proxy counts them per service
	// port: the largest count over the Service's ports and families.
	local int
}

// healthCheckOf reads a Service's health check from its built ports (ok false: none).
func healthCheckOf(ports []desired.ServicePort) (healthCheck, bool) {
	var hc healthCheck
	for _, p := range ports {
		if p.HealthCheckNodePort == 0 {
			continue
		}
		hc.port = p.HealthCheckNodePort
		n := 0
		for _, e := range p.ExternalEndpoints {
			if e.IsLocal {
				n++
			}
		}
		hc.local = max(hc.local, n)
	}
	return hc, hc.port != 0
}

// serviceHealth serves kube-proxy's per-Service health checks: on each
// healthCheckNodePort, 200 while this node has local endpoints for the Service and the
// proxy is healthy, 503 otherwise, so an external load balancer sends a Local-policy
// Service's traffic only to nodes that can serve it. It owns one listener and server
// goroutine per port, stopped by update (port gone) or stop.
type serviceHealth struct {
	listen       func(port uint16) (net.Listener, error)
	proxyHealthy func() bool
	logger       *slog.Logger

	mu     sync.Mutex
	ports  map[uint16]*healthPortServer
	wg     sync.WaitGroup
	closed bool
}

type healthPortServer struct {
	server *http.Server

	mu      sync.Mutex
	svc     types.NamespacedName
	local   int
	healthy func() bool
}

func newServiceHealth(listen func(uint16) (net.Listener, error), proxyHealthy func() bool, logger *slog.Logger) *serviceHealth {
	return &serviceHealth{listen: listen, proxyHealthy: proxyHealthy, logger: logger, ports: map[uint16]*healthPortServer{}}
}

// listenAllAddresses is the production listener: the port on every address, as
// kube-proxy does.
func listenAllAddresses(port uint16) (net.Listener, error) {
	return net.Listen("tcp", fmt.Sprintf(":%d", port))
}

// update makes the served ports those of want. A port that cannot be bound is logged
// and tried again at the next update.
func (h *serviceHealth) update(want map[types.NamespacedName]healthCheck) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	byPort := map[uint16]types.NamespacedName{}
	for svc, hc := range want {
		if other, dup := byPort[hc.port]; dup {
			h.logger.Warn("service proxy: two Services share a healthCheckNodePort; serving the first", "port", hc.port, "services", []string{other.String(), svc.String()})
			continue
		}
		byPort[hc.port] = svc
	}
	for port, srv := range h.ports {
		if svc, ok := byPort[port]; !ok || svc != srv.svc {
			_ = srv.server.Close()
			delete(h.ports, port)
		}
	}
	for port, svc := range byPort {
		srv := h.ports[port]
		if srv == nil {
			ln, err := h.listen(port)
			if err != nil {
				h.logger.Warn("service proxy: cannot serve a health check node port", "service", svc.String(), "port", port, "err", err)
				continue
			}
			srv = &healthPortServer{svc: svc, healthy: h.proxyHealthy}
			srv.server = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
				ErrorLog: slog.NewLogLogger(h.logger.Handler(), slog.LevelWarn)}
			h.ports[port] = srv
			h.wg.Go(func() {
				if err := srv.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					h.logger.Warn("service proxy: health check node port stopped", "port", port, "err", err)
				}
			})
		}
		srv.mu.Lock()
		srv.local = want[svc].local
		srv.mu.Unlock()
	}
}

// stop closes every listener and waits for the servers to end.
func (h *serviceHealth) stop(ctx context.Context) {
	h.mu.Lock()
	h.closed = true
	for port, srv := range h.ports {
		_ = srv.server.Shutdown(ctx)
		delete(h.ports, port)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// serviceHealthBody is kube-proxy's health check JSON.
type serviceHealthBody struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *healthPortServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	var body serviceHealthBody
	body.Service.Namespace, body.Service.Name = s.svc.Namespace, s.svc.Name
	body.LocalEndpoints = s.local
	healthy := s.healthy
	s.mu.Unlock()
	body.ServiceProxyHealthy = healthy == nil || healthy()
	code := http.StatusOK
	if body.LocalEndpoints == 0 || !body.ServiceProxyHealthy {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
