package nftrules

import (
	"net/netip"
	"time"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// Addresses of the test node and its network, used by the golden, simulator and
// kernel tests alike.
var (
	nodeIP     = netip.MustParseAddr("192.0.2.10")
	nodeIP6    = netip.MustParseAddr("2001:db8::10")
	otherHost  = netip.MustParseAddr("192.0.2.50")
	podCIDR    = netip.MustParsePrefix("10.244.0.0/16")
	svcCIDR    = netip.MustParsePrefix("10.96.0.0/16")
	podCIDR6   = netip.MustParsePrefix("fd00:244::/48")
	svcCIDR6   = netip.MustParsePrefix("fd00:96::/112")
	localPod   = netip.MustParseAddr("10.244.1.5")
	remotePodA = netip.MustParseAddr("10.244.2.7")
	remotePodB = netip.MustParseAddr("10.244.3.9")
)

func a(s string) netip.Addr { return netip.MustParseAddr(s) }

func ep(addr string, port uint16, node string, local bool) desired.Endpoint {
	return desired.Endpoint{Addr: a(addr), Port: port, NodeName: node, IsLocal: local, Ready: true, Serving: true}
}

func pn(name, port string, proto desired.Protocol) desired.ServicePortName {
	return desired.ServicePortName{Namespace: "ns", Name: name, Port: port, Protocol: proto}
}

// shapes is the table of service shapes every rule test runs over.
func shapes() map[string]desired.ServicePort {
	twoEPs := []desired.Endpoint{ep("10.244.2.7", 8080, "node-a", false), ep("10.244.3.9", 8080, "node-b", false)}
	withLocal := []desired.Endpoint{ep("10.244.1.5", 8080, "node-1", true), ep("10.244.2.7", 8080, "node-a", false)}
	onlyLocal := []desired.Endpoint{ep("10.244.1.5", 8080, "node-1", true)}
	return map[string]desired.ServicePort{
		"clusterip": {ClusterIP: a("10.96.0.10"), Port: 80, ClusterEndpoints: twoEPs, ExternalEndpoints: twoEPs},
		"udp-dns": {Protocol: desired.UDP, ClusterIP: a("10.96.0.53"), Port: 53,
			ClusterEndpoints: []desired.Endpoint{ep("10.244.2.7", 53, "node-a", false)}},
		"sctp": {Protocol: desired.SCTP, ClusterIP: a("10.96.0.40"), Port: 9000,
			ClusterEndpoints: []desired.Endpoint{ep("10.244.3.9", 9000, "node-b", false)}},
		"no-endpoints": {ClusterIP: a("10.96.0.20"), Port: 80, NodePort: 30020},
		"affinity": {ClusterIP: a("10.96.0.30"), Port: 80, SessionAffinity: 10800 * time.Second,
			ClusterEndpoints: withLocal, ExternalEndpoints: withLocal},
		"nodeport": {ClusterIP: a("10.96.0.31"), Port: 80, NodePort: 30080,
			ClusterEndpoints: twoEPs, ExternalEndpoints: twoEPs},
		"nodeport-local": {ClusterIP: a("10.96.0.32"), Port: 80, NodePort: 30081, ExternalPolicyLocal: true,
			ClusterEndpoints: withLocal, ExternalEndpoints: onlyLocal},
		"nodeport-local-elsewhere": {ClusterIP: a("10.96.0.33"), Port: 80, NodePort: 30082, ExternalPolicyLocal: true,
			ClusterEndpoints: twoEPs, HasEndpointsElsewhere: true},
		"internal-local-elsewhere": {ClusterIP: a("10.96.0.34"), Port: 80, InternalPolicyLocal: true, HasEndpointsElsewhere: true},
		"loadbalancer": {ClusterIP: a("10.96.0.35"), Port: 443, NodePort: 30443,
			ExternalIPs: []netip.Addr{a("198.51.100.7")}, LoadBalancerIPs: []netip.Addr{a("203.0.113.9")},
			LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/28"), netip.MustParsePrefix("198.18.0.0/15")},
			ClusterEndpoints:         twoEPs, ExternalEndpoints: twoEPs},
		"headless": {Port: 80, ClusterEndpoints: twoEPs},
		"ipv6": {Family: desired.IPv6, ClusterIP: a("fd00:96::10"), Port: 80, NodePort: 30090,
			ClusterEndpoints:  []desired.Endpoint{ep("fd00:244:2::7", 8080, "node-a", false)},
			ExternalEndpoints: []desired.Endpoint{ep("fd00:244:2::7", 8080, "node-a", false)}},
	}
}

// snapshotOf builds a snapshot from shapes (Family and Protocol defaulted).
func snapshotOf(shapes map[string]desired.ServicePort) *desired.Snapshot {
	snap := &desired.Snapshot{
		NodeName:     "node-1",
		NodeIPs:      []netip.Addr{nodeIP, nodeIP6, a("127.0.0.1")},
		ClusterCIDRs: []netip.Prefix{podCIDR, podCIDR6},
		ServiceCIDRs: []netip.Prefix{svcCIDR, svcCIDR6},
		Services:     map[desired.ServicePortName][]desired.ServicePort{},
	}
	for name, sp := range shapes {
		if sp.Protocol == "" {
			sp.Protocol = desired.TCP
		}
		if sp.Family == 0 {
			sp.Family = desired.IPv4
		}
		sp.Name = pn(name, "http", sp.Protocol)
		snap.Services[sp.Name] = append(snap.Services[sp.Name], sp)
	}
	return snap
}
