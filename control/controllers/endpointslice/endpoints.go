package endpointslice

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// groupKey names the slices that may hold an endpoint: one address type and one list
// of resolved ports. Every slice carries exactly one of each.
type groupKey struct {
	addressType discoveryv1.AddressType
	ports       string // portsKey of the ports
}

// endpointGroup is what the pods say about one groupKey: its ports and its endpoints,
// by address.
type endpointGroup struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   map[string]discoveryv1.Endpoint
}

// nodeZones answers what the node cache knows: whether a node exists and its zone.
type nodeZones func(name string) (zone string, known bool)

// desiredState is the result of desiredEndpoints.
type desiredState struct {
	groups map[groupKey]*endpointGroup
	// unknownNodes counts pods left out because the node cache does not know their node
	// (yet): the sync is retried for them.
	unknownNodes int
}

// endpointCount is the number of endpoints over all groups.
func (d desiredState) endpointCount() int {
	n := 0
	for _, g := range d.groups {
		n += len(g.endpoints)
	}
	return n
}

// desiredEndpoints computes, from a Service with a selector and the pods it selects,
// the endpoints its slices should hold, grouped by address type and ports.
func desiredEndpoints(svc *v1.Service, pods []*v1.Pod, zones nodeZones) desiredState {
	state := desiredState{groups: map[groupKey]*endpointGroup{}}
	types := addressTypes(svc)
	for _, pod := range pods {
		if !includePod(pod) {
			continue
		}
		zone, known := zones(pod.Spec.NodeName)
		if !known {
			state.unknownNodes++
			continue
		}
		ports := endpointPorts(svc, pod)
		key := portsKey(ports)
		for _, t := range types {
			ip := podIP(pod, t)
			if ip == "" {
				continue
			}
			gk := groupKey{addressType: t, ports: key}
			g := state.groups[gk]
			if g == nil {
				g = &endpointGroup{addressType: t, ports: ports, endpoints: map[string]discoveryv1.Endpoint{}}
				state.groups[gk] = g
			}
			g.endpoints[ip] = podEndpoint(svc, pod, ip, zone)
		}
	}
	return state
}

// addressTypes are the families a Service's slices carry: its ipFamilies, else the
// families of its cluster IPs, else IPv4.
func addressTypes(svc *v1.Service) []discoveryv1.AddressType {
	var types []discoveryv1.AddressType
	add := func(t discoveryv1.AddressType) {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case v1.IPv4Protocol:
			add(discoveryv1.AddressTypeIPv4)
		case v1.IPv6Protocol:
			add(discoveryv1.AddressTypeIPv6)
		}
	}
	if len(types) == 0 {
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				add(familyOf(a))
			}
		}
	}
	if len(types) == 0 {
		add(discoveryv1.AddressTypeIPv4)
	}
	return types
}

func familyOf(a netip.Addr) discoveryv1.AddressType {
	if a.Is4() || a.Is4In6() {
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

// includePod is kube-controller-manager's rule: a pod with an IP and a node that has
// not finished for good (a pod that restarts always never has; OnFailure ones have when
// they succeeded; Never ones when they succeeded or failed). Terminating pods stay, with
// their terminating condition.
func includePod(pod *v1.Pod) bool {
	if pod.Spec.NodeName == "" || (pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0) {
		return false
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
	case v1.RestartPolicyOnFailure:
		return pod.Status.Phase != v1.PodSucceeded
	}
	return true
}

// podIP is the pod's address of the slice's type, in canonical form, or "".
func podIP(pod *v1.Pod, t discoveryv1.AddressType) string {
	candidates := make([]string, 0, len(pod.Status.PodIPs)+1)
	for _, ip := range pod.Status.PodIPs {
		candidates = append(candidates, ip.IP)
	}
	candidates = append(candidates, pod.Status.PodIP)
	for _, s := range candidates {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			continue
		}
		if familyOf(a) == t {
			return a.Unmap().String()
		}
	}
	return ""
}

// podEndpoint is the endpoint for one pod address.
func podEndpoint(svc *v1.Service, pod *v1.Pod, ip, zone string) discoveryv1.Endpoint {
	serving := podReady(pod)
	terminating := pod.DeletionTimestamp != nil
	// Never ready while terminating, so clients stop opening connections to it, unless
	// the Service asks for every address.
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	node := pod.Spec.NodeName
	ep := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		NodeName:   &node,
	}
	if zone != "" {
		ep.Zone = &zone
	}
	// A pod's DNS name under a headless Service: its hostname when its subdomain is the
	// Service.
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	ep.Hints = hints(svc, node, zone)
	return ep
}

// hints are the topology hints trafficDistribution asks for. An endpoint without a
// zone gets no zone hint; consumers then ignore zone hints for the whole Service.
func hints(svc *v1.Service, node, zone string) *discoveryv1.EndpointHints {
	if svc.Spec.TrafficDistribution == nil {
		return nil
	}
	var h discoveryv1.EndpointHints
	switch *svc.Spec.TrafficDistribution {
	case v1.ServiceTrafficDistributionPreferClose, v1.ServiceTrafficDistributionPreferSameZone:
	case v1.ServiceTrafficDistributionPreferSameNode:
		h.ForNodes = []discoveryv1.ForNode{{Name: node}}
	default:
		return nil
	}
	if zone != "" {
		h.ForZones = []discoveryv1.ForZone{{Name: zone}}
	}
	if len(h.ForNodes) == 0 && len(h.ForZones) == 0 {
		return nil
	}
	return &h
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// endpointPorts resolves each Service port for one pod, in the Service's order. A port
// whose named targetPort the pod does not have is left out for that pod.
func endpointPorts(svc *v1.Service, pod *v1.Pod) []discoveryv1.EndpointPort {
	ports := make([]discoveryv1.EndpointPort, 0, len(svc.Spec.Ports))
	for _, sp := range svc.Spec.Ports {
		num, ok := targetPort(sp, pod)
		if !ok {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		if proto == "" {
			proto = v1.ProtocolTCP
		}
		p := discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &num}
		if sp.AppProtocol != nil {
			ap := *sp.AppProtocol
			p.AppProtocol = &ap
		}
		ports = append(ports, p)
	}
	return ports
}

// targetPort is the pod's port number for a Service port.
func targetPort(sp v1.ServicePort, pod *v1.Pod) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		return namedPort(pod, sp.TargetPort.StrVal, sp.Protocol)
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, true
	}
	return sp.Port, true
}

// namedPort finds a container port by name and protocol, in the app containers and
// the sidecars (init containers that keep running).
func namedPort(pod *v1.Pod, name string, proto v1.Protocol) (int32, bool) {
	if proto == "" {
		proto = v1.ProtocolTCP
	}
	containers := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	for _, c := range containers {
		for _, p := range c.Ports {
			cp := p.Protocol
			if cp == "" {
				cp = v1.ProtocolTCP
			}
			if p.Name == name && cp == proto {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// portsKey encodes a port list so equal lists (after the API's defaulting: no name is
// "", no protocol is TCP) have equal keys.
func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		name, proto, app, num := "", string(v1.ProtocolTCP), "", "*"
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		if p.Port != nil {
			num = strconv.Itoa(int(*p.Port))
		}
		b.WriteString(name + "/" + proto + "/" + num + "/" + app + ";")
	}
	return b.String()
}
