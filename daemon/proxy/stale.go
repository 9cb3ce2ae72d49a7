package proxy

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// staleSet collects the UDP conntrack flows a change makes stale, without duplicates.
type staleSet struct {
	endpoints map[desired.StaleUDPEndpoint]bool
	services  map[desired.StaleUDPService]bool
}

func newStaleSet() *staleSet {
	return &staleSet{endpoints: map[desired.StaleUDPEndpoint]bool{}, services: map[desired.StaleUDPService]bool{}}
}

// serviceAddr is one address a service port is reached on, with the node port that
// goes with it (only on the cluster IP, so each node port is named once).
type serviceAddr struct {
	addr     netip.AddrPort
	nodePort uint16
}

func addressesOf(p desired.ServicePort) []serviceAddr {
	out := []serviceAddr{{netip.AddrPortFrom(p.ClusterIP, p.Port), p.NodePort}}
	for _, a := range p.ExternalIPs {
		out = append(out, serviceAddr{addr: netip.AddrPortFrom(a, p.Port)})
	}
	for _, a := range p.LoadBalancerIPs {
		out = append(out, serviceAddr{addr: netip.AddrPortFrom(a, p.Port)})
	}
	return out
}

func hasEndpoints(p desired.ServicePort) bool {
	return len(p.ClusterEndpoints) > 0 || len(p.ExternalEndpoints) > 0
}

func endpointSet(p desired.ServicePort) map[netip.AddrPort]bool {
	m := map[netip.AddrPort]bool{}
	for _, e := range p.ClusterEndpoints {
		m[e.AddrPort()] = true
	}
	for _, e := range p.ExternalEndpoints {
		m[e.AddrPort()] = true
	}
	return m
}

// add compares one Service's UDP ports before and after a change:
//   - a service address that went away (port, family or Service deleted, IP changed)
//     loses all its flows;
//   - a port that lost all its endpoints loses all its flows (the contract's "lost all
//     endpoints"), and so does a port that gained its first ones: flows set up while it
//     had none were never DNATed, and conntrack would keep them that way;
//   - an endpoint a port no longer uses loses the flows DNATed to it.
func (s *staleSet) add(before, now []desired.ServicePort) {
	type key struct {
		name   desired.ServicePortName
		family desired.Family
	}
	next := map[key]desired.ServicePort{}
	for _, p := range now {
		if p.Protocol == desired.UDP {
			next[key{p.Name, p.Family}] = p
		}
	}
	seen := map[key]bool{}
	for _, old := range before {
		if old.Protocol != desired.UDP {
			continue
		}
		k := key{old.Name, old.Family}
		seen[k] = true
		cur, exists := next[k]
		if !exists {
			s.allFlows(old)
			continue
		}
		curAddrs := map[netip.AddrPort]bool{}
		for _, a := range addressesOf(cur) {
			curAddrs[a.addr] = true
		}
		for _, a := range addressesOf(old) {
			if !curAddrs[a.addr] {
				s.services[desired.StaleUDPService{Service: a.addr, NodePort: a.nodePort}] = true
			}
		}
		if hasEndpoints(old) != hasEndpoints(cur) {
			s.allFlows(cur)
		}
		if !hasEndpoints(old) {
			continue
		}
		kept := endpointSet(cur)
		for ep := range endpointSet(old) {
			if kept[ep] {
				continue
			}
			for _, a := range addressesOf(old) {
				if curAddrs[a.addr] {
					s.endpoints[desired.StaleUDPEndpoint{Service: a.addr, Endpoint: ep, NodePort: a.nodePort}] = true
				}
			}
		}
	}
	for k, p := range next {
		if !seen[k] && hasEndpoints(p) {
			s.allFlows(p)
		}
	}
}

func (s *staleSet) allFlows(p desired.ServicePort) {
	for _, a := range addressesOf(p) {
		s.services[desired.StaleUDPService{Service: a.addr, NodePort: a.nodePort}] = true
	}
}

// lists returns the set sorted, so Changes compare stably in tests and logs.
func (s *staleSet) lists() ([]desired.StaleUDPEndpoint, []desired.StaleUDPService) {
	var eps []desired.StaleUDPEndpoint
	for e := range s.endpoints {
		eps = append(eps, e)
	}
	slices.SortFunc(eps, func(a, b desired.StaleUDPEndpoint) int {
		return cmp.Or(a.Service.Compare(b.Service), a.Endpoint.Compare(b.Endpoint), cmp.Compare(a.NodePort, b.NodePort))
	})
	var svcs []desired.StaleUDPService
	for v := range s.services {
		svcs = append(svcs, v)
	}
	slices.SortFunc(svcs, func(a, b desired.StaleUDPService) int {
		return cmp.Or(a.Service.Compare(b.Service), cmp.Compare(a.NodePort, b.NodePort))
	})
	return eps, svcs
}
