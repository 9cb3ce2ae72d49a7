package linkns

import "net/netip"

// PodInterface is a pod's side of the network: a veth pair from the node's bridge
// into the pod's namespace.
type PodInterface struct {
	// HostName is the host end's name (at most 15 bytes); it becomes a Bridge port.
	HostName string
	Bridge   string
	// NetNSPath is the pod's namespace (a file CreateNetNS made).
	NetNSPath string
	// Addresses are eth0's, one per family, each as a single-address prefix (/32,
	// /128): every packet a pod sends, also to a pod on the same bridge, goes through
	// the node's routing and so its netfilter hooks (Service DNAT, and the un-DNAT of
	// the reply, work without bridge netfilter).
	Addresses []netip.Addr
	// Gateways are the bridge's addresses, one per family: the pod reaches each as an
	// on-link host and routes everything else through it.
	Gateways []netip.Addr
}

// PodInterfaceName is the pod's end of the pair inside its namespace.
const PodInterfaceName = "eth0"
