// Package conntrack deletes UDP connection-tracking flows through netlink
// (github.com/vishvananda/netlink's conntrack support): the flows of a Service
// address or node port, optionally only those DNATed to one endpoint, so the next
// datagram of a client is load-balanced afresh instead of following a stale entry to
// an endpoint that is gone.
//
// It owns the netlink socket it opens (Close releases it) and touches only the
// conntrack table of the network namespace the socket was opened in. It dumps that
// table once per DeleteUDP call and deletes only matching UDP flows.
package conntrack
