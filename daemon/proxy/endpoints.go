package proxy

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// candidate is one endpoint of one service port in one family before selection, with
// the topology hints selection needs and the rules do not.
type candidate struct {
	desired.Endpoint
	zoneHints []string
	nodeHints []string
}

// mergeEndpoints collects the endpoints of every slice of one Service for one of its
// ports (matched by port name and protocol) in one family. An address and port that
// several slices list (a slice being replaced, say) appears once: the first in slice
// name order, unless a later copy is on this node and the first is not, as kube-proxy
// does. Endpoints without an address, or whose address is not of the family, are
// skipped. The result is sorted by address then port.
func mergeEndpoints(slicesOfService []*discoveryv1.EndpointSlice, portName string, proto corev1.Protocol,
	family desired.Family, nodeName string) []candidate {
	sorted := slices.Clone(slicesOfService)
	slices.SortFunc(sorted, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	index := map[netip.AddrPort]int{}
	var out []candidate
	for _, slice := range sorted {
		if familyOfAddressType(slice.AddressType) != family {
			continue
		}
		port, ok := slicePort(slice, portName, proto)
		if !ok {
			continue
		}
		for _, ep := range slice.Endpoints {
			c, ok := newCandidate(ep, port, family, nodeName)
			if !ok {
				continue
			}
			key := c.AddrPort()
			if i, dup := index[key]; dup {
				if c.IsLocal && !out[i].IsLocal {
					out[i] = c
				}
				continue
			}
			index[key] = len(out)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int { return compareEndpoints(a.Endpoint, b.Endpoint) })
	return out
}

func compareEndpoints(a, b desired.Endpoint) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	return cmp.Compare(a.Port, b.Port)
}

func familyOfAddressType(t discoveryv1.AddressType) desired.Family {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return desired.IPv4
	case discoveryv1.AddressTypeIPv6:
		return desired.IPv6
	}
	return 0 // FQDN slices carry nothing a proxy can DNAT to
}

// slicePort finds the slice's port for a service port: same name ("" for an unnamed
// port) and protocol (TCP when unset), with a number in range.
func slicePort(slice *discoveryv1.EndpointSlice, name string, proto corev1.Protocol) (uint16, bool) {
	for _, p := range slice.Ports {
		pName := ""
		if p.Name != nil {
			pName = *p.Name
		}
		pProto := corev1.ProtocolTCP
		if p.Protocol != nil {
			pProto = *p.Protocol
		}
		if pName != name || pProto != proto || p.Port == nil {
			continue
		}
		if *p.Port <= 0 || *p.Port > 65535 {
			return 0, false
		}
		return uint16(*p.Port), true
	}
	return 0, false
}

// newCandidate reads one slice endpoint: its first address (as kube-proxy, the others
// are ignored), conditions with the API's nil meanings, locality and hints.
func newCandidate(ep discoveryv1.Endpoint, port uint16, family desired.Family, nodeName string) (candidate, bool) {
	if len(ep.Addresses) == 0 {
		return candidate{}, false
	}
	addr, err := netip.ParseAddr(ep.Addresses[0])
	if err != nil {
		return candidate{}, false
	}
	addr = addr.Unmap()
	if addr.Zone() != "" || desired.FamilyOf(addr) != family {
		return candidate{}, false
	}
	c := candidate{Endpoint: desired.Endpoint{
		Addr:        addr,
		Port:        port,
		Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
		Serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
		Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
	}}
	if ep.NodeName != nil {
		c.NodeName = *ep.NodeName
		c.IsLocal = nodeName != "" && c.NodeName == nodeName
	}
	if ep.Zone != nil {
		c.Zone = *ep.Zone
	}
	if ep.Hints != nil {
		for _, z := range ep.Hints.ForZones {
			c.zoneHints = append(c.zoneHints, z.Name)
		}
		for _, n := range ep.Hints.ForNodes {
			c.nodeHints = append(c.nodeHints, n.Name)
		}
	}
	return c, true
}
