package registry

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func newService(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Type: typ, Ports: ports, Selector: map[string]string{"app": "s"}},
	}
}

func TestServiceDefaults(t *testing.T) {
	s := newService("", corev1.ServicePort{Port: 80})
	defaultService(s, corev1.IPv4Protocol)
	p := s.Spec.Ports[0]
	if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.SessionAffinity != corev1.ServiceAffinityNone || p.Protocol != corev1.ProtocolTCP ||
		p.TargetPort != intstr.FromInt32(80) || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || s.Spec.IPFamilies[0] != corev1.IPv4Protocol ||
		*s.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || s.Spec.ExternalTrafficPolicy != "" {
		t.Fatalf("ClusterIP defaults: %+v", s.Spec)
	}
	lb := newService(corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Port: 443, TargetPort: intstr.FromString("https")})
	lb.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	defaultService(lb, corev1.IPv6Protocol)
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts ||
		*lb.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 || lb.Spec.Ports[0].TargetPort.StrVal != "https" || lb.Spec.IPFamilies[0] != corev1.IPv6Protocol {
		t.Fatalf("LoadBalancer defaults: %+v", lb.Spec)
	}
	ext := newService(corev1.ServiceTypeExternalName)
	ext.Spec.ExternalName = "db.example.com"
	defaultService(ext, corev1.IPv4Protocol)
	if ext.Spec.IPFamilies != nil || ext.Spec.IPFamilyPolicy != nil {
		t.Fatalf("an ExternalName service got IP families: %+v", ext.Spec)
	}
	static := newService("", corev1.ServicePort{Port: 53})
	static.Spec.ClusterIPs = []string{"10.96.0.10"}
	defaultService(static, corev1.IPv4Protocol)
	if static.Spec.ClusterIP != "10.96.0.10" {
		t.Fatalf("clusterIP not filled from clusterIPs: %q", static.Spec.ClusterIP)
	}
}

func TestServiceValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		svc   func() *corev1.Service
		field string
	}{
		{"no ports", func() *corev1.Service { return newService("") }, "spec.ports"},
		{"unnamed port among several", func() *corev1.Service {
			return newService("", corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "b", Port: 81})
		}, "spec.ports[0].name"},
		{"duplicate port name", func() *corev1.Service {
			return newService("", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "a", Port: 81})
		}, "spec.ports[1].name"},
		{"port zero", func() *corev1.Service { return newService("", corev1.ServicePort{Port: 0}) }, "spec.ports[0].port"},
		{"protocol", func() *corev1.Service { return newService("", corev1.ServicePort{Port: 80, Protocol: "ICMP"}) }, "spec.ports[0].protocol"},
		{"same port and protocol twice", func() *corev1.Service {
			return newService("", corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "b", Port: 80})
		}, "spec.ports[1]"},
		{"bad target port name", func() *corev1.Service {
			return newService("", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("Not_A_Name")})
		}, "spec.ports[0].targetPort"},
		{"node port on ClusterIP", func() *corev1.Service { return newService("", corev1.ServicePort{Port: 80, NodePort: 30080}) }, "spec.ports[0].nodePort"},
		{"type", func() *corev1.Service { return newService("Ingress", corev1.ServicePort{Port: 80}) }, "spec.type"},
		{"cluster IP not an address", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.ClusterIP = "10.96.0"
			return s
		}, "spec.clusterIP"},
		{"headless NodePort", func() *corev1.Service {
			s := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80})
			s.Spec.ClusterIP = "None"
			return s
		}, "spec.clusterIP"},
		{"ExternalName without a name", func() *corev1.Service { return newService(corev1.ServiceTypeExternalName) }, "spec.externalName"},
		{"ExternalName with a cluster IP", func() *corev1.Service {
			s := newService(corev1.ServiceTypeExternalName)
			s.Spec.ExternalName, s.Spec.ClusterIP = "db.example.com", "10.96.0.5"
			return s
		}, "spec.clusterIP"},
		{"dual stack", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			p := corev1.IPFamilyPolicyRequireDualStack
			s.Spec.IPFamilyPolicy = &p
			return s
		}, "spec.ipFamilyPolicy"},
		{"other family", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			return s
		}, "spec.ipFamilies[0]"},
		{"Local traffic on ClusterIP", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			return s
		}, "spec.externalTrafficPolicy"},
		{"affinity timeout", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			tmo := int32(100000)
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &tmo}}
			return s
		}, "spec.sessionAffinityConfig.clientIP.timeoutSeconds"},
		{"selector", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.Selector = map[string]string{"app": "has space"}
			return s
		}, "spec.selector"},
		{"external IP", func() *corev1.Service {
			s := newService("", corev1.ServicePort{Port: 80})
			s.Spec.ExternalIPs = []string{"nope"}
			return s
		}, "spec.externalIPs[0]"},
		{"health check port without Local", func() *corev1.Service {
			s := newService(corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Port: 80})
			s.Spec.HealthCheckNodePort = 30100
			return s
		}, "spec.healthCheckNodePort"},
		{"load balancer hostname that is an IP", func() *corev1.Service {
			s := newService(corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Port: 80})
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "1.2.3.4"}}
			return s
		}, "status.loadBalancer.ingress[0].hostname"},
	} {
		s := tc.svc()
		defaultService(s, corev1.IPv4Protocol)
		errs := validateService(s, corev1.IPv4Protocol)
		if !hasField(errs, tc.field) {
			t.Errorf("%s: errors on %v, want one on %s", tc.name, fieldsOf(errs), tc.field)
		}
	}
	for name, s := range map[string]*corev1.Service{
		"ClusterIP": newService("", corev1.ServicePort{Port: 80}),
		"headless":  {ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: corev1.ServiceSpec{ClusterIP: "None"}},
		"ExternalName": {ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."}},
		"dns over both protocols": newService(corev1.ServiceTypeNodePort,
			corev1.ServicePort{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053},
			corev1.ServicePort{Name: "tcp", Port: 53, Protocol: corev1.ProtocolTCP, NodePort: 30053}),
	} {
		defaultService(s, corev1.IPv4Protocol)
		if errs := validateService(s, corev1.IPv4Protocol); len(errs) > 0 {
			t.Errorf("%s: refused: %v", name, errs)
		}
	}
}

func TestServiceUpdateKeepsAllocations(t *testing.T) {
	old := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Name: "http", Port: 80, NodePort: 30080}, corev1.ServicePort{Name: "https", Port: 443, NodePort: 30443})
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.5.5", []string{"10.96.5.5"}
	defaultService(old, corev1.IPv4Protocol)

	// A client that sends the service without what the server filled in keeps it.
	upd := newService(corev1.ServiceTypeNodePort, corev1.ServicePort{Name: "https", Port: 8443}, corev1.ServicePort{Name: "http", Port: 80})
	defaultService(upd, corev1.IPv4Protocol)
	if errs := validateServiceUpdate(upd, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	if upd.Spec.ClusterIP != "10.96.5.5" || upd.Spec.Ports[0].NodePort != 30443 || upd.Spec.Ports[1].NodePort != 30080 {
		t.Fatalf("allocations not kept by port name: %+v", upd.Spec)
	}
	moved := old.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.96.5.6", []string{"10.96.5.6"}
	if errs := validateServiceUpdate(moved, old); !hasField(errs, "spec.clusterIP") {
		t.Fatalf("cluster IP change: %v", errs)
	}
	// To and from ExternalName the cluster IP may change.
	ext := old.DeepCopy()
	ext.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
	if errs := validateServiceUpdate(ext, old); len(errs) > 0 {
		t.Fatalf("change to ExternalName: %v", errs)
	}
}

func TestServiceRow(t *testing.T) {
	lb := newService(corev1.ServiceTypeLoadBalancer, corev1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: "TCP"}, corev1.ServicePort{Name: "b", Port: 53, Protocol: "UDP"})
	lb.Spec.ClusterIP = "10.96.0.20"
	if got := serviceExternalIP(lb); got != "<pending>" {
		t.Errorf("LB without ingress: %q, want <pending>", got)
	}
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "lb.example.com"}}
	if got := serviceExternalIP(lb); got != "192.0.2.1,lb.example.com" {
		t.Errorf("LB ingress: %q", got)
	}
	if got := servicePorts(lb.Spec.Ports); got != "80:30080/TCP,53/UDP" {
		t.Errorf("PORT(S) %q", got)
	}
	ext := newService(corev1.ServiceTypeExternalName)
	ext.Spec.ExternalName = "db.example.com"
	if serviceClusterIP(ext) != "<none>" || serviceExternalIP(ext) != "db.example.com" || servicePorts(nil) != "<none>" {
		t.Errorf("ExternalName row: %q %q", serviceClusterIP(ext), serviceExternalIP(ext))
	}
	headless := newService("")
	headless.Spec.ClusterIP = "None"
	if serviceClusterIP(headless) != "None" || serviceExternalIP(headless) != "<none>" {
		t.Errorf("headless row: %q %q", serviceClusterIP(headless), serviceExternalIP(headless))
	}
}

// FuzzServiceValidation feeds arbitrary Service bodies through defaulting and
// validation: nothing panics, defaulting is idempotent, and a service that validates
// still validates after defaulting again (as every update does).
func FuzzServiceValidation(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a"},"spec":{"ports":[{"port":80}]}}`,
		`{"metadata":{"name":"a"},"spec":{"type":"NodePort","ports":[{"name":"u","port":53,"protocol":"UDP","nodePort":30053},{"name":"t","port":53,"nodePort":30053}]}}`,
		`{"spec":{"type":"ExternalName","externalName":"db.example.com."}}`,
		`{"spec":{"clusterIP":"None"}}`,
		`{"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","healthCheckNodePort":30100,"ports":[{"port":443,"targetPort":"https"}]}}`,
		`{"spec":{"clusterIPs":["10.96.0.10","fd00::10"],"ipFamilyPolicy":"RequireDualStack","ports":[{"port":1}]}}`,
		`{"spec":{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":0}},"ports":[{"port":65536}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s corev1.Service
		if json.Unmarshal(data, &s) != nil {
			return
		}
		defaultService(&s, corev1.IPv4Protocol)
		once := s.DeepCopy()
		defaultService(&s, corev1.IPv4Protocol)
		a, _ := json.Marshal(once)
		b, _ := json.Marshal(&s)
		if string(a) != string(b) {
			t.Fatalf("defaulting twice changed the service:\n%s\n%s", a, b)
		}
		if errs := validateService(&s, corev1.IPv4Protocol); len(errs) == 0 {
			old := s.DeepCopy()
			if errs := validateServiceUpdate(&s, old); len(errs) > 0 {
				t.Fatalf("an unchanged valid service fails update validation: %v", errs)
			}
		}
		_ = serviceExternalIP(&s) + servicePorts(s.Spec.Ports) + serviceClusterIP(&s)
	})
}
