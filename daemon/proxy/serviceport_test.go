package proxy

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

var testView = nodeView{name: testNode, zone: "z1"}

func onePort(t *testing.T, ports []desired.ServicePort) desired.ServicePort {
	t.Helper()
	if len(ports) != 1 {
		t.Fatalf("got %d service ports, want 1: %+v", len(ports), ports)
	}
	return ports[0]
}

func TestBuildClusterIPService(t *testing.T) {
	svc := service("default", "web")
	sl := []*discoveryv1.EndpointSlice{
		endpointSlice("default", "web", "web-b", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort},
			ep{addr: "10.244.1.5", node: "node-b"}, ep{addr: "10.244.0.7", node: testNode}),
		// A second slice repeating an endpoint (a slice being replaced), this time on
		// this node, and one of another family that must not leak in.
		endpointSlice("default", "web", "web-a", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort},
			ep{addr: "10.244.1.5", node: "node-b", terminating: true, notReady: true}),
		endpointSlice("default", "web", "web-c", discoveryv1.AddressTypeIPv6, []slicePortSpec{httpPort}, ep{addr: "fd00::5"}),
	}
	sp := onePort(t, buildServicePorts(svc, sl, testView))
	want := desired.ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: desired.TCP}
	if sp.Name != want || sp.Family != desired.IPv4 || sp.Protocol != desired.TCP {
		t.Fatalf("name/family/protocol = %v/%v/%v", sp.Name, sp.Family, sp.Protocol)
	}
	if sp.ClusterIP != netip.MustParseAddr("10.96.0.10") || sp.Port != 80 || sp.NodePort != 0 {
		t.Fatalf("address = %v:%d nodePort %d", sp.ClusterIP, sp.Port, sp.NodePort)
	}
	// Deduplicated: the first slice by name (web-a) wins, so 10.244.1.5 is terminating
	// and not ready: only 10.244.0.7 serves.
	if got := addrs(sp.ClusterEndpoints); !slices.Equal(got, []string{"10.244.0.7"}) {
		t.Fatalf("cluster endpoints = %v", got)
	}
	if sp.ClusterEndpoints[0].Port != 8080 || !sp.ClusterEndpoints[0].IsLocal {
		t.Fatalf("endpoint = %+v, want port 8080 on this node", sp.ClusterEndpoints[0])
	}
	if sp.ExternalEndpoints != nil {
		t.Fatalf("a ClusterIP Service without external IPs has external endpoints %v", sp.ExternalEndpoints)
	}
	if sp.SessionAffinity != 0 || sp.HasEndpointsElsewhere {
		t.Fatalf("affinity %v, elsewhere %v", sp.SessionAffinity, sp.HasEndpointsElsewhere)
	}
}

func TestBuildDedupPrefersLocalCopy(t *testing.T) {
	sl := []*discoveryv1.EndpointSlice{
		endpointSlice("default", "web", "web-a", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, ep{addr: "10.244.0.7", node: "node-b"}),
		endpointSlice("default", "web", "web-b", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, ep{addr: "10.244.0.7", node: testNode}),
	}
	sp := onePort(t, buildServicePorts(service("default", "web"), sl, testView))
	if len(sp.ClusterEndpoints) != 1 || !sp.ClusterEndpoints[0].IsLocal {
		t.Fatalf("cluster endpoints = %+v, want the one local copy", sp.ClusterEndpoints)
	}
}

func TestBuildSkipsHeadlessAndExternalName(t *testing.T) {
	headless := service("default", "db", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} })
	external := service("default", "ext", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "", nil, "example.com"
	})
	noIP := service("default", "pending", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil })
	for _, svc := range []*corev1.Service{headless, external, noIP} {
		if got := buildServicePorts(svc, nil, testView); len(got) != 0 {
			t.Errorf("%s: got %d service ports, want none", svc.Name, len(got))
		}
	}
}

func TestBuildDualStack(t *testing.T) {
	svc := service("default", "web", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00:96::10"}
		s.Spec.ExternalIPs = []string{"192.0.2.9", "2001:db8::9"}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53})
	})
	dnsPort := slicePortSpec{"dns", corev1.ProtocolUDP, 5353}
	sl := []*discoveryv1.EndpointSlice{
		endpointSlice("default", "web", "web-v4", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort, dnsPort}, ep{addr: "10.244.0.7"}),
		endpointSlice("default", "web", "web-v6", discoveryv1.AddressTypeIPv6, []slicePortSpec{httpPort}, ep{addr: "fd00:244::7"}),
	}
	ports := buildServicePorts(svc, sl, testView)
	if len(ports) != 4 {
		t.Fatalf("got %d service ports, want 4 (2 ports × 2 families): %+v", len(ports), ports)
	}
	byKey := map[string]desired.ServicePort{}
	for _, p := range ports {
		byKey[p.Name.String()+"/"+p.ClusterIP.String()] = p
	}
	v4 := byKey["default/web:http/TCP/10.96.0.10"]
	v6 := byKey["default/web:http/TCP/fd00:96::10"]
	dns6 := byKey["default/web:dns/UDP/fd00:96::10"]
	dns4 := byKey["default/web:dns/UDP/10.96.0.10"]
	if v4.Family != desired.IPv4 || v6.Family != desired.IPv6 {
		t.Fatalf("families: %v %v", v4.Family, v6.Family)
	}
	if got := addrs(v6.ClusterEndpoints); !slices.Equal(got, []string{"fd00:244::7"}) {
		t.Fatalf("IPv6 endpoints = %v", got)
	}
	if got := addrs(dns4.ClusterEndpoints); !slices.Equal(got, []string{"10.244.0.7"}) || dns4.ClusterEndpoints[0].Port != 5353 {
		t.Fatalf("IPv4 dns endpoints = %+v", dns4.ClusterEndpoints)
	}
	if len(dns6.ClusterEndpoints) != 0 {
		t.Fatalf("IPv6 dns has endpoints %v though no IPv6 slice carries the port", dns6.ClusterEndpoints)
	}
	if !slices.Equal(v4.ExternalIPs, []netip.Addr{netip.MustParseAddr("192.0.2.9")}) ||
		!slices.Equal(v6.ExternalIPs, []netip.Addr{netip.MustParseAddr("2001:db8::9")}) {
		t.Fatalf("external IPs not split by family: %v / %v", v4.ExternalIPs, v6.ExternalIPs)
	}
	if got := addrs(v4.ExternalEndpoints); !slices.Equal(got, []string{"10.244.0.7"}) {
		t.Fatalf("external IPs make the Service externally reachable; external endpoints = %v", got)
	}
}

func TestBuildSessionAffinity(t *testing.T) {
	def := service("default", "a", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP })
	custom := service("default", "b", func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(60))}}
	})
	if got := onePort(t, buildServicePorts(def, nil, testView)).SessionAffinity; got != 10800*time.Second {
		t.Errorf("default affinity timeout = %v, want 3h", got)
	}
	if got := onePort(t, buildServicePorts(custom, nil, testView)).SessionAffinity; got != time.Minute {
		t.Errorf("affinity timeout = %v, want 1m", got)
	}
}

func TestBuildTrafficPolicies(t *testing.T) {
	localEp := ep{addr: "10.244.0.7", node: testNode}
	remoteEp := ep{addr: "10.244.1.5", node: "node-b"}
	remoteTerm := ep{addr: "10.244.1.6", node: "node-b", notReady: true, terminating: true}
	type want struct {
		cluster, external []string // nil external: not externally reachable
		elsewhere         bool
	}
	for _, tc := range []struct {
		name      string
		svcType   corev1.ServiceType
		internal  corev1.ServiceInternalTrafficPolicy
		external  corev1.ServiceExternalTrafficPolicy
		endpoints []ep
		want      want
	}{
		{"cluster/cluster ClusterIP", corev1.ServiceTypeClusterIP, "Cluster", "Cluster", []ep{localEp, remoteEp},
			want{cluster: []string{"10.244.0.7", "10.244.1.5"}}},
		{"external Local on a ClusterIP Service means nothing", corev1.ServiceTypeClusterIP, "Cluster", "Local", []ep{remoteEp},
			want{cluster: []string{"10.244.1.5"}}},
		{"NodePort cluster/cluster", corev1.ServiceTypeNodePort, "Cluster", "Cluster", []ep{localEp, remoteEp},
			want{cluster: []string{"10.244.0.7", "10.244.1.5"}, external: []string{"10.244.0.7", "10.244.1.5"}}},
		{"NodePort external Local", corev1.ServiceTypeNodePort, "Cluster", "Local", []ep{localEp, remoteEp},
			want{cluster: []string{"10.244.0.7", "10.244.1.5"}, external: []string{"10.244.0.7"}}},
		{"NodePort external Local, none here", corev1.ServiceTypeNodePort, "Cluster", "Local", []ep{remoteEp},
			want{cluster: []string{"10.244.1.5"}, external: []string{}, elsewhere: true}},
		{"internal Local", corev1.ServiceTypeClusterIP, "Local", "Cluster", []ep{localEp, remoteEp},
			want{cluster: []string{"10.244.0.7"}}},
		{"internal Local, none here", corev1.ServiceTypeClusterIP, "Local", "Cluster", []ep{remoteEp},
			want{cluster: []string{}, elsewhere: true}},
		{"internal Local, nothing anywhere", corev1.ServiceTypeClusterIP, "Local", "Cluster", nil,
			want{cluster: []string{}}},
		{"NodePort internal Local, external Cluster", corev1.ServiceTypeNodePort, "Local", "Cluster", []ep{remoteEp},
			want{cluster: []string{}, external: []string{"10.244.1.5"}, elsewhere: true}},
		{"NodePort both Local", corev1.ServiceTypeNodePort, "Local", "Local", []ep{localEp, remoteEp},
			want{cluster: []string{"10.244.0.7"}, external: []string{"10.244.0.7"}}},
		{"Cluster falls back to terminating elsewhere", corev1.ServiceTypeNodePort, "Cluster", "Cluster", []ep{remoteTerm},
			want{cluster: []string{"10.244.1.6"}, external: []string{"10.244.1.6"}}},
		{"Local with only a terminating endpoint elsewhere drops", corev1.ServiceTypeNodePort, "Cluster", "Local", []ep{remoteTerm},
			want{cluster: []string{"10.244.1.6"}, external: []string{}, elsewhere: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service("default", "web", func(s *corev1.Service) {
				s.Spec.Type = tc.svcType
				s.Spec.InternalTrafficPolicy = &tc.internal
				s.Spec.ExternalTrafficPolicy = tc.external
				if tc.svcType == corev1.ServiceTypeNodePort {
					s.Spec.Ports[0].NodePort = 30080
				}
			})
			sl := endpointSlice("default", "web", "web-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{httpPort}, tc.endpoints...)
			sp := onePort(t, buildServicePorts(svc, []*discoveryv1.EndpointSlice{sl}, testView))
			if got := addrs(sp.ClusterEndpoints); !slices.Equal(got, tc.want.cluster) {
				t.Errorf("cluster endpoints = %v, want %v", got, tc.want.cluster)
			}
			if tc.want.external == nil {
				if sp.ExternalEndpoints != nil {
					t.Errorf("external endpoints = %v, want nil", addrs(sp.ExternalEndpoints))
				}
			} else if got := addrs(sp.ExternalEndpoints); sp.ExternalEndpoints == nil || !slices.Equal(got, tc.want.external) {
				t.Errorf("external endpoints = %v (nil %v), want %v", got, sp.ExternalEndpoints == nil, tc.want.external)
			}
			if sp.HasEndpointsElsewhere != tc.want.elsewhere {
				t.Errorf("HasEndpointsElsewhere = %v, want %v", sp.HasEndpointsElsewhere, tc.want.elsewhere)
			}
			wantNodePort := uint16(0)
			if tc.svcType == corev1.ServiceTypeNodePort {
				wantNodePort = 30080
			}
			if sp.NodePort != wantNodePort {
				t.Errorf("node port = %d, want %d", sp.NodePort, wantNodePort)
			}
		})
	}
}

func TestBuildLoadBalancer(t *testing.T) {
	svc := service("default", "lb", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.LoadBalancerSourceRanges = []string{" 203.0.113.0/24", "2001:db8::/32", "bogus", "198.51.100.7/16"}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{
			{IP: "192.0.2.100"},
			{IP: "192.0.2.101", IPMode: ptr(corev1.LoadBalancerIPModeProxy)},
			{IP: "192.0.2.102", IPMode: ptr(corev1.LoadBalancerIPModeVIP)},
			{Hostname: "lb.example.com"},
		}
	})
	sp := onePort(t, buildServicePorts(svc, nil, testView))
	if !slices.Equal(sp.LoadBalancerIPs, []netip.Addr{netip.MustParseAddr("192.0.2.100"), netip.MustParseAddr("192.0.2.102")}) {
		t.Errorf("load-balancer IPs = %v (ipMode Proxy and hostnames excluded)", sp.LoadBalancerIPs)
	}
	wantRanges := []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.0.0/16")}
	if !slices.Equal(sp.LoadBalancerSourceRanges, wantRanges) {
		t.Errorf("source ranges = %v, want %v (trimmed, masked, IPv4 only, bad ones dropped)", sp.LoadBalancerSourceRanges, wantRanges)
	}
	if sp.HealthCheckNodePort != 32000 || sp.NodePort != 30080 || !sp.ExternalPolicyLocal {
		t.Errorf("health check node port %d, node port %d, external Local %v", sp.HealthCheckNodePort, sp.NodePort, sp.ExternalPolicyLocal)
	}
	clusterPolicy := svc.DeepCopy()
	clusterPolicy.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	if got := onePort(t, buildServicePorts(clusterPolicy, nil, testView)).HealthCheckNodePort; got != 0 {
		t.Errorf("health check node port %d with externalTrafficPolicy Cluster, want 0", got)
	}
	notLB := service("default", "np", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.100"}}
	})
	if sp := onePort(t, buildServicePorts(notLB, nil, testView)); sp.LoadBalancerIPs != nil || sp.LoadBalancerSourceRanges != nil {
		t.Errorf("a NodePort Service got load-balancer IPs %v / ranges %v", sp.LoadBalancerIPs, sp.LoadBalancerSourceRanges)
	}
}

func TestBuildPortMatching(t *testing.T) {
	svc := service("default", "web", func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53},
			{Name: "sctp", Protocol: corev1.ProtocolSCTP, Port: 9999},
		}
	})
	sl := endpointSlice("default", "web", "web-1", discoveryv1.AddressTypeIPv4, []slicePortSpec{
		{"dns", corev1.ProtocolUDP, 5353},
		{"dns-tcp", corev1.ProtocolUDP, 5354}, // wrong protocol: not the TCP port's
		{"sctp", corev1.ProtocolSCTP, 9000},
	}, ep{addr: "10.244.0.7"})
	ports := buildServicePorts(svc, []*discoveryv1.EndpointSlice{sl}, testView)
	got := map[string][]desired.Endpoint{}
	for _, p := range ports {
		got[p.Name.Port] = p.ClusterEndpoints
	}
	if len(got["dns"]) != 1 || got["dns"][0].Port != 5353 {
		t.Errorf("dns endpoints = %+v", got["dns"])
	}
	if len(got["dns-tcp"]) != 0 {
		t.Errorf("dns-tcp matched a UDP slice port: %+v", got["dns-tcp"])
	}
	if len(got["sctp"]) != 1 || got["sctp"][0].Port != 9000 {
		t.Errorf("sctp endpoints = %+v", got["sctp"])
	}
}
