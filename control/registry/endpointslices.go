package registry

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// Kubernetes' limits on an EndpointSlice.
const (
	maxSliceEndpoints = 1000
	maxSlicePorts     = 100
	maxSliceAddresses = 100
	maxTopologyHints  = 8
)

var addressTypes = []string{string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), string(discoveryv1.AddressTypeFQDN)}

// EndpointSlices is discovery.k8s.io/v1 endpointslices, namespaced. Slices belong to a
// service through the kubernetes.io/service-name label, which a label selector finds.
func EndpointSlices() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"},
		Plural:       "endpointslices", Kind: "EndpointSlice", Namespaced: true,
		New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		Default: func(obj runtime.Object) { defaultEndpointSlice(obj.(*discoveryv1.EndpointSlice)) },
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateEndpointSlice(obj.(*discoveryv1.EndpointSlice))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
			if s.AddressType != o.AddressType {
				return field.ErrorList{field.Invalid(field.NewPath("addressType"), s.AddressType, fmt.Sprintf("field is immutable (was %s)", o.AddressType))}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "AddressType", Type: "string", Description: "addressType specifies the type of address carried by this EndpointSlice."},
			{Name: "Ports", Type: "string", Description: "ports specifies the list of network ports exposed by each endpoint in this slice."},
			{Name: "Endpoints", Type: "string", Description: "endpoints is a list of unique endpoints in this slice."},
			apiserver.AgeColumn,
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			s := obj.(*discoveryv1.EndpointSlice)
			return []any{string(s.AddressType), slicePorts(s.Ports), sliceEndpoints(s.Endpoints), apiserver.Age(s.CreationTimestamp, now)}
		},
	}
}

func defaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			empty := ""
			p.Name = &empty
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	if !oneOf(string(s.AddressType), addressTypes) {
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, addressTypes))
	}
	eps := field.NewPath("endpoints")
	if len(s.Endpoints) > maxSliceEndpoints {
		errs = append(errs, field.TooMany(eps, len(s.Endpoints), maxSliceEndpoints))
	}
	for i, ep := range s.Endpoints {
		p := eps.Index(i)
		switch n := len(ep.Addresses); {
		case n == 0:
			errs = append(errs, field.Required(p.Child("addresses"), "an endpoint has at least one address"))
		case n > maxSliceAddresses:
			errs = append(errs, field.TooMany(p.Child("addresses"), n, maxSliceAddresses))
		}
		for j, addr := range ep.Addresses {
			if msg := checkSliceAddress(s.AddressType, addr); msg != "" {
				errs = append(errs, field.Invalid(p.Child("addresses").Index(j), addr, msg))
			}
		}
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hints != nil && len(ep.Hints.ForZones) > maxTopologyHints {
			errs = append(errs, field.TooMany(p.Child("hints", "forZones"), len(ep.Hints.ForZones), maxTopologyHints))
		}
	}
	ports := field.NewPath("ports")
	if len(s.Ports) > maxSlicePorts {
		errs = append(errs, field.TooMany(ports, len(s.Ports), maxSlicePorts))
	}
	names := map[string]bool{}
	for i, port := range s.Ports {
		p := ports.Index(i)
		if port.Name != nil && *port.Name != "" {
			for _, msg := range validation.IsDNS1123Label(*port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), *port.Name, msg))
			}
		}
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil || !oneOf(string(*port.Protocol), protocols) {
			var got any
			if port.Protocol != nil {
				got = *port.Protocol
			}
			errs = append(errs, field.NotSupported(p.Child("protocol"), got, protocols))
		}
		if port.Port != nil {
			for _, msg := range validation.IsInRange(int(*port.Port), 0, 65535) {
				errs = append(errs, field.Invalid(p.Child("port"), *port.Port, msg))
			}
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(p.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return errs
}

// checkSliceAddress returns why addr is not an address of type t, or "".
func checkSliceAddress(t discoveryv1.AddressType, addr string) string {
	switch t {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		ip, err := netip.ParseAddr(addr)
		if err != nil || ip.Zone() != "" {
			return fmt.Sprintf("must be a valid %s address", t)
		}
		if ip.Is4() != (t == discoveryv1.AddressTypeIPv4) {
			return fmt.Sprintf("must be an %s address", t)
		}
	case discoveryv1.AddressTypeFQDN:
		if msgs := validation.IsFullyQualifiedDomainName(field.NewPath(""), addr); len(msgs) > 0 {
			return msgs.ToAggregate().Error()
		}
	}
	return ""
}

// slicePorts and sliceEndpoints are kubectl's lists: three items, then "+ N more...".
func slicePorts(ports []discoveryv1.EndpointPort) string {
	items := make([]string, 0, len(ports))
	for _, p := range ports {
		switch {
		case p.Port != nil:
			items = append(items, strconv.Itoa(int(*p.Port)))
		case p.Name != nil && *p.Name != "":
			items = append(items, *p.Name)
		default:
			items = append(items, "*")
		}
	}
	return firstThree(items)
}

func sliceEndpoints(eps []discoveryv1.Endpoint) string {
	var items []string
	for _, ep := range eps {
		items = append(items, ep.Addresses...)
	}
	return firstThree(items)
}

func firstThree(items []string) string {
	switch {
	case len(items) == 0:
		return "<unset>"
	case len(items) > 3:
		return fmt.Sprintf("%s + %d more...", strings.Join(items[:3], ","), len(items)-3)
	}
	return strings.Join(items, ",")
}
