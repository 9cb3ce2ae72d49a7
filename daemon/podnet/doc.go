// Package podnet gives pods on this node their network: a bridge (plinth0) in the
// node's namespace carrying the gateway address of each of the node's pod CIDRs (the
// first address after the network address), and for each pod a named network
// namespace (a bind mount at /run/plinth/netns/<name>, as `ip netns` keeps them under
// /var/run/netns), a veth pair whose host end (plv + 12 hex digits of the pod UID's
// SHA-256) is a bridge port and whose other end is eth0 in the pod's namespace, an
// address from each pod CIDR, lo up, and a default route through the gateway.
// hostNetwork pods use the node's namespace and need none of this.
//
// Pods get single-address prefixes (/32, /128) with an on-link route to the gateway,
// so all their traffic, also to a pod on the same bridge, is routed by the node and
// passes its netfilter hooks: Service DNAT and the reverse translation of the reply
// work without bridge netfilter (set to 1 where the kernel has it anyway). Where bridge
// netfilter is on, a connection DNATed to a pod on the bridge is bridged to it, so a
// pod reaching itself through a Service (hairpin, masqueraded by the proxy) goes back
// out of the port it came in by: every pod's port is in hairpin mode for that. Forwarding
// is turned on (net.ipv4.ip_forward; net.ipv6.conf.all.forwarding with an IPv6 pod
// CIDR, which also stops the node's interfaces from accepting router advertisements).
// Pod traffic to anything outside the cluster CIDRs is masqueraded by the table inet
// plinth-podnet (masquerade_linux.go documents its rules).
//
// Addresses come from Allocator, whose state (/var/lib/plinth/podnet/ipam.json) is
// written crash-safely before an address is used, so pods keep their addresses over a
// restart of plinthd. Setup and Teardown are idempotent and keyed by pod UID; a
// failure leaves what was made for a retry or a Teardown to finish. Cleanup removes
// the bridge and the table (plinthd --cleanup).
//
// WaitForPodCIDRs reads the node's pod CIDRs from its Node through
// controlclient/nodeclient. Fake is a Network without a kernel for the runtime's tests.
//
// It owns the bridge, the plv* links, the namespace files it creates, the table and the
// state directory; it reaches the kernel only through kernel/linkns and, for the table,
// google/nftables.
package podnet
