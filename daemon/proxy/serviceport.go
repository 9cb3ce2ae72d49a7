package proxy

import (
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// DefaultAffinityTimeout is ClientIP session affinity's timeout when the Service sets
// none (sessionAffinityConfig.clientIP.timeoutSeconds, 3 hours).
const DefaultAffinityTimeout = 10800 * time.Second

// nodeView is what endpoint selection needs to know about this node.
type nodeView struct {
	name string
	zone string
}

// buildServicePorts turns one Service and its EndpointSlices into the service ports
// this node implements: one per port and IP family of the Service. Headless and
// ExternalName Services get none. The slices must be the Service's own (same namespace
// and kubernetes.io/service-name label).
func buildServicePorts(svc *corev1.Service, slicesOfService []*discoveryv1.EndpointSlice, node nodeView) []desired.ServicePort {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	clusterIPs := svc.Spec.ClusterIPs
	if len(clusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		clusterIPs = []string{svc.Spec.ClusterIP}
	}
	var out []desired.ServicePort
	seenFamily := map[desired.Family]bool{}
	for _, ipText := range clusterIPs {
		if ipText == corev1.ClusterIPNone {
			return nil
		}
		clusterIP, err := netip.ParseAddr(ipText)
		if err != nil {
			continue
		}
		clusterIP = clusterIP.Unmap()
		family := desired.FamilyOf(clusterIP)
		if seenFamily[family] {
			continue
		}
		seenFamily[family] = true
		shared := familyFields(svc, family)
		for _, p := range svc.Spec.Ports {
			sp, ok := buildPort(svc, p, clusterIP, family, shared, slicesOfService, node)
			if ok {
				out = append(out, sp)
			}
		}
	}
	return out
}

// familyShared holds what every port of a Service shares in one family.
type familyShared struct {
	externalIPs     []netip.Addr
	lbIPs           []netip.Addr
	lbSourceRanges  []netip.Prefix
	affinity        time.Duration
	externalLocal   bool
	internalLocal   bool
	externallyUsed  bool
	healthCheckPort uint16
}

func familyFields(svc *corev1.Service, family desired.Family) familyShared {
	var f familyShared
	for _, s := range svc.Spec.ExternalIPs {
		if a, ok := parseAddrOfFamily(s, family); ok {
			f.externalIPs = append(f.externalIPs, a)
		}
	}
	isLB := svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	if isLB {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			// With ipMode Proxy the load balancer delivers to the node itself, so the
			// ingress IP must not be captured here.
			if ing.IPMode != nil && *ing.IPMode == corev1.LoadBalancerIPModeProxy {
				continue
			}
			if a, ok := parseAddrOfFamily(ing.IP, family); ok {
				f.lbIPs = append(f.lbIPs, a)
			}
		}
		for _, s := range svc.Spec.LoadBalancerSourceRanges {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				continue
			}
			p = p.Masked()
			if desired.FamilyOf(p.Addr()) == family {
				f.lbSourceRanges = append(f.lbSourceRanges, p)
			}
		}
	}
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		f.affinity = DefaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
			f.affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	// A Service is reachable from outside the cluster through node ports, load
	// balancers and external IPs; only then does externalTrafficPolicy mean anything.
	f.externallyUsed = svc.Spec.Type == corev1.ServiceTypeNodePort || isLB || len(svc.Spec.ExternalIPs) > 0
	f.externalLocal = f.externallyUsed && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	f.internalLocal = svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	if isLB && f.externalLocal && svc.Spec.HealthCheckNodePort > 0 && svc.Spec.HealthCheckNodePort <= 65535 {
		f.healthCheckPort = uint16(svc.Spec.HealthCheckNodePort)
	}
	return f
}

func buildPort(svc *corev1.Service, p corev1.ServicePort, clusterIP netip.Addr, family desired.Family, f familyShared,
	slicesOfService []*discoveryv1.EndpointSlice, node nodeView) (desired.ServicePort, bool) {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		return desired.ServicePort{}, false
	}
	if p.Port <= 0 || p.Port > 65535 {
		return desired.ServicePort{}, false
	}
	sp := desired.ServicePort{
		Name:                     desired.ServicePortName{Namespace: svc.Namespace, Name: svc.Name, Port: p.Name, Protocol: desired.Protocol(proto)},
		Family:                   family,
		Protocol:                 desired.Protocol(proto),
		ClusterIP:                clusterIP,
		Port:                     uint16(p.Port),
		ExternalIPs:              f.externalIPs,
		LoadBalancerIPs:          f.lbIPs,
		LoadBalancerSourceRanges: f.lbSourceRanges,
		SessionAffinity:          f.affinity,
		ExternalPolicyLocal:      f.externalLocal,
		InternalPolicyLocal:      f.internalLocal,
		HealthCheckNodePort:      f.healthCheckPort,
	}
	if (svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer) && p.NodePort > 0 && p.NodePort <= 65535 {
		sp.NodePort = uint16(p.NodePort)
	}
	externallyUsed := f.externallyUsed
	usesCluster := !f.internalLocal || (externallyUsed && !f.externalLocal)
	usesLocal := f.internalLocal || f.externalLocal
	cands := mergeEndpoints(slicesOfService, p.Name, proto, family, node.name)
	sel := selectEndpoints(cands, usesCluster, usesLocal, node.name, node.zone)
	pick := func(local bool) []desired.Endpoint {
		if local {
			return sel.local
		}
		return sel.cluster
	}
	sp.ClusterEndpoints = nonNil(pick(f.internalLocal))
	if externallyUsed {
		sp.ExternalEndpoints = nonNil(pick(f.externalLocal))
	}
	sp.HasEndpointsElsewhere = usesLocal && sel.hasAny && len(sel.local) == 0
	return sp, true
}

func nonNil(eps []desired.Endpoint) []desired.Endpoint {
	if eps == nil {
		return []desired.Endpoint{}
	}
	return eps
}

func parseAddrOfFamily(s string, family desired.Family) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	return a, desired.FamilyOf(a) == family
}
