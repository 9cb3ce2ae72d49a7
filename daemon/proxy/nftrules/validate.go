package nftrules

import (
	"fmt"

	"github.com/plinth/plinth/daemon/proxy/desired"
)

// validatePort rejects a service port the rules cannot express, naming the port, the
// field and the value. Sync checks every port it is about to generate before it builds
// a batch, so bad input changes nothing.
func validatePort(name desired.ServicePortName, sp *desired.ServicePort) error {
	bad := func(field string, value any, want string) error {
		return fmt.Errorf("service port %s: field %s: %v: %s", name, field, value, want)
	}
	if sp.Family != desired.IPv4 && sp.Family != desired.IPv6 {
		return bad("Family", int(sp.Family), "want 4 or 6")
	}
	switch sp.Protocol {
	case desired.TCP, desired.UDP, desired.SCTP:
	default:
		return bad("Protocol", fmt.Sprintf("%q", sp.Protocol), "want TCP, UDP or SCTP")
	}
	if !sp.ClusterIP.IsValid() {
		return nil // headless: no rules, nothing else matters
	}
	if desired.FamilyOf(sp.ClusterIP) != sp.Family {
		return bad("ClusterIP", sp.ClusterIP, fmt.Sprintf("not of family %d", sp.Family))
	}
	if sp.Port == 0 {
		return bad("Port", 0, "want 1-65535")
	}
	if sp.SessionAffinity < 0 {
		return bad("SessionAffinity", sp.SessionAffinity, "want 0 (none) or a positive timeout")
	}
	for i, ep := range append(append([]desired.Endpoint{}, sp.ClusterEndpoints...), sp.ExternalEndpoints...) {
		if !ep.Addr.IsValid() || ep.Port == 0 {
			return bad(fmt.Sprintf("endpoints[%d]", i), ep.AddrPort(), "want an address and a port")
		}
	}
	return nil
}
