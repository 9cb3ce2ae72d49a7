package endpointslice

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(name string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("svc-" + name)},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: ports, ClusterIP: "10.96.0.10",
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol}},
	}
}

func svcPort(name string, port int32, target intstr.IntOrString) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: port, TargetPort: target, Protocol: v1.ProtocolTCP}
}

// pod is Ready on node n1 with one IP.
func pod(name, ip string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

func zonesOf(m map[string]string) nodeZones {
	return func(name string) (string, bool) {
		z, ok := m[name]
		return z, ok
	}
}

var oneZone = zonesOf(map[string]string{"n1": "zone-a", "n2": "zone-b", "bare": ""})

func TestEndpointConditions(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name                        string
		mutate                      func(*v1.Pod, *v1.Service)
		ready, serving, terminating bool
	}{
		{"ready pod", func(*v1.Pod, *v1.Service) {}, true, true, false},
		{"not ready pod", func(p *v1.Pod, _ *v1.Service) { p.Status.Conditions[0].Status = v1.ConditionFalse }, false, false, false},
		{"no Ready condition", func(p *v1.Pod, _ *v1.Service) { p.Status.Conditions = nil }, false, false, false},
		{"terminating ready pod serves but is not ready", func(p *v1.Pod, _ *v1.Service) { p.DeletionTimestamp = &now }, false, true, true},
		{"terminating not ready pod", func(p *v1.Pod, _ *v1.Service) {
			p.DeletionTimestamp = &now
			p.Status.Conditions[0].Status = v1.ConditionFalse
		}, false, false, true},
		{"publishNotReadyAddresses makes a not ready pod ready", func(p *v1.Pod, s *v1.Service) {
			p.Status.Conditions[0].Status = v1.ConditionFalse
			s.Spec.PublishNotReadyAddresses = true
		}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, p := service("web", svcPort("http", 80, intstr.FromInt32(8080))), pod("a", "10.0.0.1")
			tc.mutate(p, svc)
			got := desiredEndpoints(svc, []*v1.Pod{p}, oneZone)
			ep := onlyEndpoint(t, got)
			c := ep.Conditions
			if *c.Ready != tc.ready || *c.Serving != tc.serving || *c.Terminating != tc.terminating {
				t.Fatalf("ready/serving/terminating = %v/%v/%v, want %v/%v/%v", *c.Ready, *c.Serving, *c.Terminating, tc.ready, tc.serving, tc.terminating)
			}
			if *ep.NodeName != "n1" || *ep.Zone != "zone-a" || ep.TargetRef.Name != "a" || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID != "uid-a" {
				t.Fatalf("topology and target: %+v", ep)
			}
		})
	}
}

func onlyEndpoint(t *testing.T, d desiredState) discoveryv1.Endpoint {
	t.Helper()
	if len(d.groups) != 1 {
		t.Fatalf("%d groups, want 1: %+v", len(d.groups), d.groups)
	}
	for _, g := range d.groups {
		if len(g.endpoints) != 1 {
			t.Fatalf("%d endpoints, want 1", len(g.endpoints))
		}
		for _, ep := range g.endpoints {
			return ep
		}
	}
	panic("unreachable")
}

func TestWhichPodsBecomeEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   int
	}{
		{"running pod", func(*v1.Pod) {}, 1},
		{"no IP yet", func(p *v1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }, 0},
		{"not bound", func(p *v1.Pod) { p.Spec.NodeName = "" }, 0},
		{"node the cache does not know", func(p *v1.Pod) { p.Spec.NodeName = "ghost" }, 0},
		{"restart Never, failed", func(p *v1.Pod) { p.Spec.RestartPolicy, p.Status.Phase = v1.RestartPolicyNever, v1.PodFailed }, 0},
		{"restart OnFailure, failed (will restart)", func(p *v1.Pod) { p.Spec.RestartPolicy, p.Status.Phase = v1.RestartPolicyOnFailure, v1.PodFailed }, 1},
		{"restart OnFailure, succeeded", func(p *v1.Pod) { p.Spec.RestartPolicy, p.Status.Phase = v1.RestartPolicyOnFailure, v1.PodSucceeded }, 0},
		{"only an IPv6 address for an IPv4 Service", func(p *v1.Pod) { p.Status.PodIP, p.Status.PodIPs = "fd00::1", []v1.PodIP{{IP: "fd00::1"}} }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("a", "10.0.0.1")
			tc.mutate(p)
			got := desiredEndpoints(service("web", svcPort("http", 80, intstr.FromInt32(8080))), []*v1.Pod{p}, oneZone)
			if got.endpointCount() != tc.want {
				t.Fatalf("%d endpoints, want %d", got.endpointCount(), tc.want)
			}
			if wantUnknown := tc.name == "node the cache does not know"; (got.unknownNodes > 0) != wantUnknown {
				t.Fatalf("unknownNodes %d", got.unknownNodes)
			}
		})
	}
}

func TestDualStackPodsGoToBothFamilies(t *testing.T) {
	svc := service("web", svcPort("http", 80, intstr.FromInt32(8080)))
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	p := pod("a", "10.0.0.1")
	p.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00:0::1"}}
	got := desiredEndpoints(svc, []*v1.Pod{p}, oneZone)
	want := map[discoveryv1.AddressType]string{discoveryv1.AddressTypeIPv4: "10.0.0.1", discoveryv1.AddressTypeIPv6: "fd00::1"}
	if len(got.groups) != 2 {
		t.Fatalf("groups: %+v", got.groups)
	}
	for gk, g := range got.groups {
		if _, ok := g.endpoints[want[gk.addressType]]; !ok {
			t.Errorf("%s group has %v, want %s (canonical form)", gk.addressType, g.endpoints, want[gk.addressType])
		}
	}
}

func TestAddressTypesOfService(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1.ServiceSpec
		want []discoveryv1.AddressType
	}{
		{"ipFamilies", v1.ServiceSpec{IPFamilies: []v1.IPFamily{v1.IPv6Protocol}}, []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}},
		{"from cluster IPs", v1.ServiceSpec{ClusterIPs: []string{"fd00::10", "10.96.0.1"}}, []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeIPv4}},
		{"nothing known", v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}, []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}},
	} {
		got := addressTypes(&v1.Service{Spec: tc.spec})
		if !apiequality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPortsResolvedFromTargetPort(t *testing.T) {
	sidecar := v1.ContainerRestartPolicyAlways
	p := pod("a", "10.0.0.1")
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "dns", ContainerPort: 5353, Protocol: v1.ProtocolUDP})
	p.Spec.InitContainers = []v1.Container{
		{Name: "proxy", RestartPolicy: &sidecar, Ports: []v1.ContainerPort{{Name: "admin", ContainerPort: 9901}}},
		{Name: "setup", Ports: []v1.ContainerPort{{Name: "once", ContainerPort: 7000}}},
	}
	for _, tc := range []struct {
		name string
		port v1.ServicePort
		want int32 // 0: left out
	}{
		{"number", svcPort("a", 80, intstr.FromInt32(8081)), 8081},
		{"named container port", svcPort("a", 80, intstr.FromString("http")), 8080},
		{"unset target is the service port", v1.ServicePort{Name: "a", Port: 443}, 443},
		{"named port of a sidecar", svcPort("a", 80, intstr.FromString("admin")), 9901},
		{"name of a plain init container is not served", svcPort("a", 80, intstr.FromString("once")), 0},
		{"missing name", svcPort("a", 80, intstr.FromString("grpc")), 0},
		{"name with the other protocol", svcPort("a", 53, intstr.FromString("dns")), 0},
		{"name with its protocol", v1.ServicePort{Name: "a", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, 5353},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service("web", tc.port)
			got := endpointPorts(svc, p)
			if tc.want == 0 {
				if len(got) != 0 {
					t.Fatalf("ports %v, want none", got)
				}
				return
			}
			if len(got) != 1 || *got[0].Port != tc.want || *got[0].Name != "a" {
				t.Fatalf("ports %+v, want port %d named a", got, tc.want)
			}
		})
	}
}

func TestPodsResolvingNamesDifferentlyLandInDifferentGroups(t *testing.T) {
	a, b, c := pod("a", "10.0.0.1"), pod("b", "10.0.0.2"), pod("c", "10.0.0.3")
	b.Spec.Containers[0].Ports[0].ContainerPort = 9090
	got := desiredEndpoints(service("web", svcPort("http", 80, intstr.FromString("http"))), []*v1.Pod{a, b, c}, oneZone)
	if len(got.groups) != 2 {
		t.Fatalf("%d groups, want 2 (8080 and 9090)", len(got.groups))
	}
	for _, g := range got.groups {
		want := map[int32]int{8080: 2, 9090: 1}[*g.ports[0].Port]
		if len(g.endpoints) != want {
			t.Errorf("port %d: %d endpoints, want %d", *g.ports[0].Port, len(g.endpoints), want)
		}
	}
}

func TestHintsForTrafficDistribution(t *testing.T) {
	for _, tc := range []struct {
		dist       string
		node, zone string
		want       *discoveryv1.EndpointHints
	}{
		{"", "n1", "zone-a", nil},
		{v1.ServiceTrafficDistributionPreferClose, "n1", "zone-a", &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}},
		{v1.ServiceTrafficDistributionPreferSameZone, "n2", "zone-b", &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-b"}}}},
		{v1.ServiceTrafficDistributionPreferSameZone, "bare", "", nil},
		{v1.ServiceTrafficDistributionPreferSameNode, "n1", "zone-a", &discoveryv1.EndpointHints{
			ForNodes: []discoveryv1.ForNode{{Name: "n1"}}, ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}},
		{v1.ServiceTrafficDistributionPreferSameNode, "bare", "", &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: "bare"}}}},
		{"SomethingNew", "n1", "zone-a", nil},
	} {
		svc := service("web")
		if tc.dist != "" {
			svc.Spec.TrafficDistribution = &tc.dist
		}
		p := pod("a", "10.0.0.1")
		p.Spec.NodeName = tc.node
		ep := onlyEndpoint(t, desiredEndpoints(svc, []*v1.Pod{p}, oneZone))
		if !apiequality.Semantic.DeepEqual(ep.Hints, tc.want) {
			t.Errorf("%q on %s: hints %+v, want %+v", tc.dist, tc.node, ep.Hints, tc.want)
		}
		if tc.zone == "" && ep.Zone != nil {
			t.Errorf("node without zone label: zone %q", *ep.Zone)
		}
	}
}

func TestHostnameOnlyUnderItsSubdomain(t *testing.T) {
	p := pod("a", "10.0.0.1")
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web"
	if ep := onlyEndpoint(t, desiredEndpoints(service("web"), []*v1.Pod{p}, oneZone)); ep.Hostname == nil || *ep.Hostname != "db-0" {
		t.Fatalf("hostname %v, want db-0", ep.Hostname)
	}
	p.Spec.Subdomain = "other"
	if ep := onlyEndpoint(t, desiredEndpoints(service("web"), []*v1.Pod{p}, oneZone)); ep.Hostname != nil {
		t.Fatalf("hostname %q under another subdomain", *ep.Hostname)
	}
}
