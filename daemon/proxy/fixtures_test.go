package proxy

import (
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// Test fixtures: compact builders for Services, EndpointSlices and endpoints.

const testNode = "node-a"

func ptr[T any](v T) *T { return &v }

// ep describes one slice endpoint: address, node, zone, conditions, hints.
type ep struct {
	addr        string
	node        string
	zone        string
	notReady    bool
	notServing  bool
	terminating bool
	forZones    []string
	forNodes    []string
}

func (e ep) slice() discoveryv1.Endpoint {
	out := discoveryv1.Endpoint{
		Addresses: []string{e.addr},
		Conditions: discoveryv1.EndpointConditions{
			Ready:       ptr(!e.notReady),
			Serving:     ptr(!e.notServing),
			Terminating: ptr(e.terminating),
		},
	}
	if e.node != "" {
		out.NodeName = ptr(e.node)
	}
	if e.zone != "" {
		out.Zone = ptr(e.zone)
	}
	if e.forZones != nil || e.forNodes != nil {
		out.Hints = &discoveryv1.EndpointHints{}
		for _, z := range e.forZones {
			out.Hints.ForZones = append(out.Hints.ForZones, discoveryv1.ForZone{Name: z})
		}
		for _, n := range e.forNodes {
			out.Hints.ForNodes = append(out.Hints.ForNodes, discoveryv1.ForNode{Name: n})
		}
	}
	return out
}

// cand is the candidate ep becomes on testNode with port 8080.
func (e ep) cand() candidate {
	c, ok := newCandidate(e.slice(), 8080, familyOfAddr(e.addr), testNode)
	if !ok {
		panic("bad fixture endpoint " + e.addr)
	}
	return c
}

func familyOfAddr(s string) desired.Family { return desired.FamilyOf(netip.MustParseAddr(s)) }

// slicePortSpec is one port of a slice.
type slicePortSpec struct {
	name  string
	proto corev1.Protocol
	port  int32
}

var httpPort = slicePortSpec{"http", corev1.ProtocolTCP, 8080}

func endpointSlice(ns, svc, name string, addrType discoveryv1.AddressType, ports []slicePortSpec, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, ResourceVersion: "1",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc},
		},
		AddressType: addrType,
	}
	for _, p := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr(p.name), Protocol: ptr(p.proto), Port: ptr(p.port)})
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, e.slice())
	}
	return s
}

func service(ns, name string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  "10.96.0.10",
			ClusterIPs: []string{"10.96.0.10"},
			Ports:      []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func withVersion(v int) func(*corev1.Service) {
	return func(s *corev1.Service) { s.ResourceVersion = strconv.Itoa(v) }
}

func endpointsAt(port uint16, eps ...ep) []desired.Endpoint {
	out := []desired.Endpoint{}
	for _, e := range eps {
		c := e.cand()
		c.Port = port
		out = append(out, c.Endpoint)
	}
	return out
}

func addrs(eps []desired.Endpoint) []string {
	out := []string{}
	for _, e := range eps {
		out = append(out, e.Addr.String())
	}
	return out
}
