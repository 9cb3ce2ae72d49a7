package registry

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

var serviceGroupKind = schema.GroupKind{Kind: "Service"}

// defaultSessionAffinityTimeout is three hours, as in Kubernetes.
const defaultSessionAffinityTimeout = int32(10800)

// Services is core/v1 services, namespaced, with the status subresource. Cluster IPs
// and node ports are claimed from claims' allocators when a service is stored and
// given back when it is deleted.
func Services(claims *ServiceClaims) *apiserver.Resource {
	family := corev1.IPv4Protocol
	if claims.ips.Range().Addr().Is6() {
		family = corev1.IPv6Protocol
	}
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "services", Kind: "Service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: []string{"all"},
		HasStatus: true,
		New:       func() runtime.Object { return &corev1.Service{} },
		Default:   func(obj runtime.Object) { defaultService(obj.(*corev1.Service), family) },
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateService(obj.(*corev1.Service), family)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			s := obj.(*corev1.Service)
			return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Type", Type: "string", Description: "type determines how the Service is exposed."},
			{Name: "Cluster-IP", Type: "string", Description: "clusterIP is the IP address of the service and is usually assigned randomly by the master."},
			{Name: "External-IP", Type: "string", Description: "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."},
			{Name: "Port(s)", Type: "string", Description: "The list of ports that are exposed by this service."},
			apiserver.AgeColumn,
			{Name: "Selector", Type: "string", Priority: 1, Description: "Route service traffic to pods with label keys and values matching this selector."},
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			s := obj.(*corev1.Service)
			return []any{string(s.Spec.Type), serviceClusterIP(s), serviceExternalIP(s), servicePorts(s.Spec.Ports),
				apiserver.Age(s.CreationTimestamp, now), labels.FormatLabels(s.Spec.Selector)}
		},
		Hooks: claims.hooks(),
	}
}

// needsNodePorts reports whether the service's type exposes node ports.
func needsNodePorts(s *corev1.Service) bool {
	switch s.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// needsHealthCheckNodePort: a LoadBalancer that keeps traffic on the node it arrives at
// tells the load balancer which nodes have endpoints through this port.
func needsHealthCheckNodePort(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// needsClusterIP: every type but ExternalName has a cluster IP (or None, headless).
func needsClusterIP(s *corev1.Service) bool { return s.Spec.Type != corev1.ServiceTypeExternalName }

// defaultService fills Kubernetes' defaults; it runs on create and every update.
func defaultService(s *corev1.Service, family corev1.IPFamily) {
	spec := &s.Spec
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		if spec.SessionAffinityConfig == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if spec.SessionAffinityConfig.ClientIP == nil {
			spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			t := defaultSessionAffinityTimeout
			spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = &t
		}
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	// clusterIP and clusterIPs[0] say the same thing; fill whichever is missing.
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		spec.ClusterIPs = []string{spec.ClusterIP}
	case spec.ClusterIP == "" && len(spec.ClusterIPs) > 0:
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.IPFamilyPolicy == nil {
		p := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &p
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{family}
	}
	if spec.InternalTrafficPolicy == nil {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	exposed := spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer
	switch {
	case exposed && spec.ExternalTrafficPolicy == "":
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	case !exposed && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster:
		// The default of a NodePort left behind by a change of type means nothing
		// here; Local would, and is refused by validation.
		spec.ExternalTrafficPolicy = ""
	}
	switch lb := spec.Type == corev1.ServiceTypeLoadBalancer; {
	case lb && spec.AllocateLoadBalancerNodePorts == nil:
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	case !lb && spec.AllocateLoadBalancerNodePorts != nil && *spec.AllocateLoadBalancerNodePorts:
		spec.AllocateLoadBalancerNodePorts = nil
	}
}

func serviceClusterIP(s *corev1.Service) string {
	if s.Spec.Type == corev1.ServiceTypeExternalName || s.Spec.ClusterIP == "" {
		return "<none>"
	}
	return s.Spec.ClusterIP
}

// serviceExternalIP is kubectl's EXTERNAL-IP: the external name, the load balancer's
// ingress points (pending until it has some), or the external IPs.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var out []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			switch {
			case in.IP != "":
				out = append(out, in.IP)
			case in.Hostname != "":
				out = append(out, in.Hostname)
			}
		}
		out = append(out, s.Spec.ExternalIPs...)
		if len(out) == 0 {
			return "<pending>"
		}
		return strings.Join(out, ",")
	}
	if len(s.Spec.ExternalIPs) > 0 {
		return strings.Join(s.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

// servicePorts is kubectl's PORT(S): 80/TCP, or 80:30080/TCP with a node port.
func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}

// parseServiceIP reads a cluster IP that is an address (not "" or "None").
func parseServiceIP(s string) (netip.Addr, bool) {
	if s == "" || s == corev1.ClusterIPNone {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(s)
	return ip, err == nil
}
