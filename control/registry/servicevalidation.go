package registry

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	serviceTypes    = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeExternalName)}
	affinities      = []string{string(corev1.ServiceAffinityNone), string(corev1.ServiceAffinityClientIP)}
	trafficPolicies = []string{"Cluster", "Local"}
	familyPolicies  = []string{string(corev1.IPFamilyPolicySingleStack), string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack)}
)

// maxSessionAffinityTimeout is one day, as in Kubernetes.
const maxSessionAffinityTimeout = 86400

// validateService checks a service as Kubernetes does, for a single-stack cluster of
// the given family. Whether a cluster IP or node port is in range and free is decided
// when it is claimed (ServiceClaims), also with a 422 naming the field.
func validateService(s *corev1.Service, family corev1.IPFamily) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	typ := s.Spec.Type
	if !oneOf(string(typ), serviceTypes) {
		errs = append(errs, field.NotSupported(spec.Child("type"), typ, serviceTypes))
	}
	headless := s.Spec.ClusterIP == corev1.ClusterIPNone
	if len(s.Spec.Ports) == 0 && typ != corev1.ServiceTypeExternalName && !headless {
		errs = append(errs, field.Required(spec.Child("ports"), "a service that is not headless or ExternalName needs at least one port"))
	}
	errs = append(errs, validateServicePorts(s, spec.Child("ports"))...)
	errs = append(errs, validateServiceAddressing(s, family, spec)...)
	if !oneOf(string(s.Spec.SessionAffinity), affinities) {
		errs = append(errs, field.NotSupported(spec.Child("sessionAffinity"), s.Spec.SessionAffinity, affinities))
	}
	cfg := s.Spec.SessionAffinityConfig
	switch {
	case s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP && cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil:
		if t := *cfg.ClientIP.TimeoutSeconds; t <= 0 || t > maxSessionAffinityTimeout {
			errs = append(errs, field.Invalid(spec.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t, fmt.Sprintf("must be greater than 0 and less than or equal to %d", maxSessionAffinityTimeout)))
		}
	case s.Spec.SessionAffinity == corev1.ServiceAffinityNone && cfg != nil:
		errs = append(errs, field.Forbidden(spec.Child("sessionAffinityConfig"), "must not be set when `sessionAffinity` is None"))
	}
	errs = append(errs, metav1validation.ValidateLabels(s.Spec.Selector, spec.Child("selector"))...)
	for i, ip := range s.Spec.ExternalIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(spec.Child("externalIPs").Index(i), ip, "must be a valid IP address"))
		}
	}
	exposed := typ == corev1.ServiceTypeNodePort || typ == corev1.ServiceTypeLoadBalancer
	if etp := s.Spec.ExternalTrafficPolicy; etp != "" {
		switch {
		case !exposed:
			errs = append(errs, field.Invalid(spec.Child("externalTrafficPolicy"), etp, "may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
		case !oneOf(string(etp), trafficPolicies):
			errs = append(errs, field.NotSupported(spec.Child("externalTrafficPolicy"), etp, trafficPolicies))
		}
	}
	if itp := s.Spec.InternalTrafficPolicy; itp != nil && !oneOf(string(*itp), trafficPolicies) {
		errs = append(errs, field.NotSupported(spec.Child("internalTrafficPolicy"), *itp, trafficPolicies))
	}
	if hc := s.Spec.HealthCheckNodePort; hc != 0 {
		if !needsHealthCheckNodePort(s) {
			errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
		for _, msg := range validation.IsValidPortNum(int(hc)) {
			errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), hc, msg))
		}
	}
	lb := typ == corev1.ServiceTypeLoadBalancer
	if s.Spec.AllocateLoadBalancerNodePorts != nil && !lb {
		errs = append(errs, field.Forbidden(spec.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	for i, cidr := range s.Spec.LoadBalancerSourceRanges {
		p := spec.Child("loadBalancerSourceRanges").Index(i)
		if !lb {
			errs = append(errs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		} else if _, err := netip.ParsePrefix(strings.TrimSpace(cidr)); err != nil {
			errs = append(errs, field.Invalid(p, cidr, "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24"))
		}
	}
	if ip := s.Spec.LoadBalancerIP; ip != "" {
		if _, err := netip.ParseAddr(ip); !lb || err != nil {
			errs = append(errs, field.Invalid(spec.Child("loadBalancerIP"), ip, "must be a valid IP address and may only be used when `type` is 'LoadBalancer'"))
		}
	}
	return append(errs, validateServiceStatus(&s.Status, field.NewPath("status"))...)
}

func validateServicePorts(s *corev1.Service, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	ports := map[string]bool{}
	nodePorts := map[string]bool{}
	exposed := s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
	for i, sp := range s.Spec.Ports {
		p := path.Index(i)
		switch {
		case sp.Name == "" && len(s.Spec.Ports) > 1:
			errs = append(errs, field.Required(p.Child("name"), "each port of a service with several ports needs a name"))
		case sp.Name != "":
			for _, msg := range validation.IsDNS1123Label(sp.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), sp.Name, msg))
			}
			if names[sp.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), sp.Name))
			}
			names[sp.Name] = true
		}
		for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
			errs = append(errs, field.Invalid(p.Child("port"), sp.Port, msg))
		}
		if !oneOf(string(sp.Protocol), protocols) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), sp.Protocol, protocols))
		}
		key := fmt.Sprintf("%d/%s", sp.Port, sp.Protocol)
		if ports[key] {
			errs = append(errs, field.Duplicate(p, key))
		}
		ports[key] = true
		switch sp.TargetPort.Type {
		case intstr.Int:
			for _, msg := range validation.IsValidPortNum(sp.TargetPort.IntValue()) {
				errs = append(errs, field.Invalid(p.Child("targetPort"), sp.TargetPort.IntValue(), msg))
			}
		case intstr.String:
			for _, msg := range validation.IsValidPortName(sp.TargetPort.StrVal) {
				errs = append(errs, field.Invalid(p.Child("targetPort"), sp.TargetPort.StrVal, msg))
			}
		}
		if sp.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
				errs = append(errs, field.Invalid(p.Child("appProtocol"), *sp.AppProtocol, msg))
			}
		}
		if sp.NodePort == 0 {
			continue
		}
		if !exposed {
			errs = append(errs, field.Forbidden(p.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", s.Spec.Type)))
			continue
		}
		for _, msg := range validation.IsValidPortNum(int(sp.NodePort)) {
			errs = append(errs, field.Invalid(p.Child("nodePort"), sp.NodePort, msg))
		}
		// One node port may serve a port over two protocols, never twice over one.
		nkey := fmt.Sprintf("%d/%s", sp.NodePort, sp.Protocol)
		if nodePorts[nkey] {
			errs = append(errs, field.Duplicate(p.Child("nodePort"), sp.NodePort))
		}
		nodePorts[nkey] = true
	}
	return errs
}

// validateServiceAddressing checks cluster IPs, families and the external name.
func validateServiceAddressing(s *corev1.Service, family corev1.IPFamily, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		if s.Spec.ClusterIP != "" || len(s.Spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("clusterIP"), "must not be set for ExternalName services"))
		}
		name := strings.TrimSuffix(s.Spec.ExternalName, ".")
		if name == "" {
			errs = append(errs, field.Required(spec.Child("externalName"), "an ExternalName service names a DNS name"))
		}
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			if name != "" {
				errs = append(errs, field.Invalid(spec.Child("externalName"), s.Spec.ExternalName, msg))
			}
		}
		return errs
	}
	ip := s.Spec.ClusterIP
	switch {
	case ip == corev1.ClusterIPNone && (s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer):
		errs = append(errs, field.Invalid(spec.Child("clusterIP"), ip, fmt.Sprintf("may not be set to 'None' for %s services", s.Spec.Type)))
	case ip != "" && ip != corev1.ClusterIPNone:
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, field.Invalid(spec.Child("clusterIP"), ip, "must be a valid IP address or 'None' (headless)"))
		}
	}
	if len(s.Spec.ClusterIPs) > 1 {
		errs = append(errs, field.Invalid(spec.Child("clusterIPs"), s.Spec.ClusterIPs, "this cluster is single-stack: at most one cluster IP"))
	}
	if len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] != ip {
		errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), s.Spec.ClusterIPs[0], "must match `spec.clusterIP`"))
	}
	if p := s.Spec.IPFamilyPolicy; p != nil {
		switch {
		case !oneOf(string(*p), familyPolicies):
			errs = append(errs, field.NotSupported(spec.Child("ipFamilyPolicy"), *p, familyPolicies))
		case *p == corev1.IPFamilyPolicyRequireDualStack:
			errs = append(errs, field.Invalid(spec.Child("ipFamilyPolicy"), *p, "this cluster is not configured for dual-stack services"))
		}
	}
	for i, f := range s.Spec.IPFamilies {
		if i > 0 {
			errs = append(errs, field.Invalid(spec.Child("ipFamilies").Index(i), f, "this cluster is single-stack: at most one IP family"))
		} else if f != family {
			errs = append(errs, field.Invalid(spec.Child("ipFamilies").Index(i), f, fmt.Sprintf("not configured on this cluster, which serves %s", family)))
		}
	}
	return errs
}

func validateServiceStatus(st *corev1.ServiceStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, in := range st.LoadBalancer.Ingress {
		p := path.Child("loadBalancer", "ingress").Index(i)
		if in.IP != "" {
			if _, err := netip.ParseAddr(in.IP); err != nil {
				errs = append(errs, field.Invalid(p.Child("ip"), in.IP, "must be a valid IP address"))
			}
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, msg))
			}
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// validateServiceUpdate keeps what was allocated when the client left it out, then
// refuses changes of the cluster IP except to or from ExternalName.
func validateServiceUpdate(s, old *corev1.Service) field.ErrorList {
	keepAllocatedValues(s, old)
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if needsClusterIP(s) && needsClusterIP(old) {
		if s.Spec.ClusterIP != old.Spec.ClusterIP {
			errs = append(errs, field.Invalid(spec.Child("clusterIP"), s.Spec.ClusterIP, fmt.Sprintf("field is immutable (was %q); delete and recreate the service to change it", old.Spec.ClusterIP)))
		}
		if len(old.Spec.IPFamilies) > 0 && (len(s.Spec.IPFamilies) == 0 || s.Spec.IPFamilies[0] != old.Spec.IPFamilies[0]) {
			errs = append(errs, field.Invalid(spec.Child("ipFamilies"), s.Spec.IPFamilies, "the primary IP family may not change"))
		}
	}
	return errs
}

// keepAllocatedValues copies the cluster IP, node ports and health check node port
// from the stored service into an update that leaves them empty, as Kubernetes does for
// clients that send a service without the fields the server filled in.
//
// It mutates s: the apiserver has no hook that prepares an update with the stored
// object before validation, so the update validator does this first.
func keepAllocatedValues(s, old *corev1.Service) {
	if needsClusterIP(s) && needsClusterIP(old) && s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) == 0 {
		s.Spec.ClusterIP = old.Spec.ClusterIP
		s.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
	}
	if needsNodePorts(s) && needsNodePorts(old) {
		used := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			used[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if v := byName[p.Name]; p.NodePort == 0 && v != 0 && !used[v] {
				p.NodePort = v
				used[v] = true
			}
		}
	}
	if needsHealthCheckNodePort(s) && needsHealthCheckNodePort(old) && s.Spec.HealthCheckNodePort == 0 {
		s.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}
