package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// loopbackPorts stands in for binding node ports: each requested port gets an
// ephemeral loopback listener, and the test looks up where it went.
type loopbackPorts struct {
	mu    sync.Mutex
	addrs map[uint16]string
	fail  map[uint16]bool
}

func (l *loopbackPorts) listen(port uint16) (net.Listener, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail[port] {
		return nil, errors.New("address already in use")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l.addrs[port] = ln.Addr().String()
	return ln, nil
}

func (l *loopbackPorts) addr(port uint16) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrs[port]
}

func getHealth(t *testing.T, addr string) (int, serviceHealthBody, error) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		return 0, serviceHealthBody{}, err
	}
	defer resp.Body.Close()
	var body serviceHealthBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("body: %v", err)
	}
	return resp.StatusCode, body, nil
}

func TestServiceHealthServesLocalEndpointCounts(t *testing.T) {
	ports := &loopbackPorts{addrs: map[uint16]string{}, fail: map[uint16]bool{32002: true}}
	var proxyHealthy atomic.Bool
	proxyHealthy.Store(true)
	h := newServiceHealth(ports.listen, proxyHealthy.Load, slog.New(slog.DiscardHandler))
	defer h.stop(context.Background())
	lb := types.NamespacedName{Namespace: "default", Name: "lb"}
	empty := types.NamespacedName{Namespace: "default", Name: "empty"}
	taken := types.NamespacedName{Namespace: "default", Name: "taken"}
	h.update(map[types.NamespacedName]healthCheck{lb: {port: 32000, local: 2}, empty: {port: 32001}, taken: {port: 32002, local: 1}})

	code, body, err := getHealth(t, ports.addr(32000))
	if err != nil || code != 200 || body.LocalEndpoints != 2 || !body.ServiceProxyHealthy || body.Service.Name != "lb" || body.Service.Namespace != "default" {
		t.Fatalf("lb health = %d %+v %v", code, body, err)
	}
	if code, body, err := getHealth(t, ports.addr(32001)); err != nil || code != 503 || body.LocalEndpoints != 0 {
		t.Fatalf("no local endpoints = %d %+v %v", code, body, err)
	}
	if ports.addr(32002) != "" {
		t.Fatal("a port that failed to bind has an address")
	}
	// The proxy itself unhealthy: every port answers 503.
	proxyHealthy.Store(false)
	if code, body, _ := getHealth(t, ports.addr(32000)); code != 503 || body.ServiceProxyHealthy {
		t.Fatalf("with the proxy unhealthy = %d %+v", code, body)
	}
	proxyHealthy.Store(true)
	// Counts follow updates; a Service gone closes its port; a failed port is retried.
	old := ports.addr(32001)
	ports.mu.Lock()
	delete(ports.fail, 32002)
	ports.mu.Unlock()
	h.update(map[types.NamespacedName]healthCheck{lb: {port: 32000, local: 1}, taken: {port: 32002, local: 1}})
	if code, body, _ := getHealth(t, ports.addr(32000)); code != 200 || body.LocalEndpoints != 1 {
		t.Fatalf("after the update = %d %+v", code, body)
	}
	if _, _, err := getHealth(t, old); err == nil {
		t.Fatal("the removed Service's port still answers")
	}
	if code, _, err := getHealth(t, ports.addr(32002)); err != nil || code != 200 {
		t.Fatalf("retried port = %d %v", code, err)
	}
}

func TestHealthCheckFromSnapshot(t *testing.T) {
	w := newWorld(t)
	w.tracker.upsertService(service("default", "lb", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00:96::10"}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443})
	}))
	https := slicePortSpec{"https", corev1.ProtocolTCP, 8443}
	w.tracker.upsertSlice(endpointSlice("default", "lb", "lb-4", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort, https},
		ep{addr: "10.244.0.7", node: testNode}, ep{addr: "10.244.0.8", node: testNode}, ep{addr: "10.244.1.5", node: "node-b"}), time.Time{})
	w.tracker.upsertSlice(endpointSlice("default", "lb", "lb-6", discoveryv1.AddressTypeIPv6, []slicePortSpec{httpPort},
		ep{addr: "fd00:244::7", node: testNode}), time.Time{})
	w.sync(true)
	hc := w.snap.healthChecks[types.NamespacedName{Namespace: "default", Name: "lb"}]
	// Two local endpoints serve each IPv4 port, one the IPv6 port: the count is 2.
	if hc.port != 32000 || hc.local != 2 {
		t.Fatalf("health check = %+v, want port 32000 with 2 local endpoints", hc)
	}
	w.tracker.deleteService("default", "lb")
	w.sync(false)
	if len(w.snap.healthChecks) != 0 {
		t.Fatalf("health checks after delete = %v", w.snap.healthChecks)
	}
}
