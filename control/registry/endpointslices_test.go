package registry

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEndpointSliceValidation(t *testing.T) {
	port := func(p int32) *int32 { return &p }
	name := func(s string) *string { return &s }
	base := func() *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-1"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Hostname: name("web-0"), NodeName: name("n1")}},
			Ports:       []discoveryv1.EndpointPort{{Name: name("http"), Port: port(80)}},
		}
		defaultEndpointSlice(s)
		return s
	}
	if errs := validateEndpointSlice(base()); len(errs) > 0 {
		t.Fatalf("valid slice refused: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		field  string
	}{
		{"address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPv5" }, "addressType"},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, "endpoints[0].addresses"},
		{"not an address", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"10.0.0"} }, "endpoints[0].addresses[0]"},
		{"wrong family", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::1"} }, "endpoints[0].addresses[0]"},
		{"hostname", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = name("Web_0") }, "endpoints[0].hostname"},
		{"duplicate port name", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: name("http"), Port: port(81), Protocol: s.Ports[0].Protocol})
		}, "ports[1].name"},
		{"port range", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = port(70000) }, "ports[0].port"},
		{"FQDN", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"not a name"}
		}, "endpoints[0].addresses[0]"},
	} {
		s := base()
		tc.mutate(s)
		errs := validateEndpointSlice(s)
		if !hasField(errs, tc.field) {
			t.Errorf("%s: errors on %v, want one on %s", tc.name, fieldsOf(errs), tc.field)
		}
	}
	if got := slicePorts([]discoveryv1.EndpointPort{{Port: port(80)}, {Name: name("dns")}, {}, {Port: port(9)}}); got != "80,dns,* + 1 more..." {
		t.Errorf("PORTS %q", got)
	}
	if got := sliceEndpoints(nil); got != "<unset>" {
		t.Errorf("ENDPOINTS of an empty slice %q", got)
	}
}
