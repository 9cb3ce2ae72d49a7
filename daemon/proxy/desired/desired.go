package desired

import (
	"fmt"
	"net/netip"
	"time"
)

// Protocol is a transport protocol a Service port can carry.
type Protocol string

const (
	TCP  Protocol = "TCP"
	UDP  Protocol = "UDP"
	SCTP Protocol = "SCTP"
)

// Family is an IP family. Each family gets its own nftables table (ip and ip6).
type Family int

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// FamilyOf reports the family of a, treating IPv4-mapped IPv6 addresses as IPv4.
func FamilyOf(a netip.Addr) Family {
	if a.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

// ServicePortName names one port of one Service. Port is the port's name in the
// Service spec ("" for an unnamed single port).
type ServicePortName struct {
	Namespace string
	Name      string
	Port      string
	Protocol  Protocol
}

func (n ServicePortName) String() string {
	if n.Port == "" {
		return fmt.Sprintf("%s/%s:%s", n.Namespace, n.Name, n.Protocol)
	}
	return fmt.Sprintf("%s/%s:%s/%s", n.Namespace, n.Name, n.Port, n.Protocol)
}

// Endpoint is one backend a service port may send traffic to.
type Endpoint struct {
	Addr netip.Addr
	Port uint16
	// NodeName and Zone come from the EndpointSlice; IsLocal is NodeName == this node.
	NodeName string
	Zone     string
	IsLocal  bool
	// Conditions as the EndpointSlice states them (a nil ready counts as true).
	Ready       bool
	Serving     bool
	Terminating bool
}

func (e Endpoint) AddrPort() netip.AddrPort { return netip.AddrPortFrom(e.Addr, e.Port) }

// ServicePort is everything the rules need to implement one port of one Service in
// one IP family. A dual-stack Service yields one ServicePort per family.
type ServicePort struct {
	Name     ServicePortName
	Family   Family
	Protocol Protocol

	// ClusterIP is invalid (zero) for headless Services, which get no rules.
	ClusterIP netip.Addr
	Port      uint16
	// NodePort is 0 when the Service has none.
	NodePort                 uint16
	ExternalIPs              []netip.Addr
	LoadBalancerIPs          []netip.Addr
	LoadBalancerSourceRanges []netip.Prefix

	// SessionAffinity is ClientIP affinity's timeout; 0 means no affinity.
	SessionAffinity time.Duration

	// ExternalPolicyLocal and InternalPolicyLocal are externalTrafficPolicy: Local and
	// internalTrafficPolicy: Local.
	ExternalPolicyLocal bool
	InternalPolicyLocal bool
	// HealthCheckNodePort is set for LoadBalancer Services with ExternalPolicyLocal.
	HealthCheckNodePort uint16

	// ClusterEndpoints serve traffic addressed to the ClusterIP (and external traffic
	// when the external policy is Cluster); ExternalEndpoints serve traffic to node
	// ports, external IPs and load-balancer IPs. Both are final: readiness, the
	// terminating fallback, traffic policies and topology hints were already applied,
	// and each is sorted by address then port. Empty means: reject (or drop, for
	// Local policies with endpoints elsewhere; see HasEndpointsElsewhere).
	ClusterEndpoints  []Endpoint
	ExternalEndpoints []Endpoint
	// HasEndpointsElsewhere is true when the Service has usable endpoints but none this
	// node may use under a Local policy: such traffic is dropped, not rejected.
	HasEndpointsElsewhere bool
}

// Snapshot is the whole desired state at one moment.
type Snapshot struct {
	// NodeName is this node; NodeIPs are its primary addresses, where NodePorts
	// listen by default (--nodeport-addresses primary).
	NodeName string
	NodeIPs  []netip.Addr
	// NodePortAddresses, when set, replaces NodeIPs as the NodePort listen set
	// (--nodeport-addresses CIDRs): every local address inside one of them.
	NodePortAddresses []netip.Prefix
	// ClusterCIDRs, when known, let masquerade marking tell pod traffic from
	// off-node traffic; ServiceCIDRs let unallocated ClusterIPs be rejected.
	ClusterCIDRs []netip.Prefix
	ServiceCIDRs []netip.Prefix

	// Services by name; a Service port appears once per family it has.
	Services map[ServicePortName][]ServicePort
}

// Changes says what differs from the previous Snapshot handed to the rule syncer.
// A full sync ignores Changed and regenerates everything.
type Changes struct {
	Full bool
	// Changed holds service ports whose rules may differ (added, updated or deleted).
	Changed map[ServicePortName]bool
	// StaleUDPEndpoints are UDP backends removed from a service port: their conntrack
	// entries must be deleted so the next datagram picks a live endpoint.
	StaleUDPEndpoints []StaleUDPEndpoint
	// StaleUDPServices are UDP service addresses (cluster, external, load-balancer,
	// and node ports as NodePort) whose service went away or lost all endpoints, or
	// that gained their first endpoints (flows set up while nothing was DNATed would
	// otherwise keep bypassing DNAT).
	StaleUDPServices []StaleUDPService
}

// StaleUDPEndpoint is a conntrack flow to delete: traffic to Service (VIP:port)
// that was DNATed to Endpoint.
type StaleUDPEndpoint struct {
	Service  netip.AddrPort
	Endpoint netip.AddrPort
	// NodePort, when not 0, also deletes flows that arrived on this node port.
	NodePort uint16
}

// StaleUDPService is a UDP service address whose conntrack flows must all go.
type StaleUDPService struct {
	Service netip.AddrPort
	// NodePort, when not 0, also deletes flows to this node port.
	NodePort uint16
}
