// Package node keeps plinthd's Node object and node Lease in the control service: it
// registers the Node (labels, taints, addresses, capacity, allocatable, system info),
// renews the Lease kube-node-lease/<node> as the heartbeat, and posts node status
// (the Ready condition plus the pressure conditions a ConditionSource supplies) when it
// changes or when the report interval passes.
//
// It owns the Node's labels it sets, its status addresses, capacity, allocatable,
// nodeInfo and the conditions it reports, and the node's Lease; it leaves every other
// field and every foreign label and condition as it finds them, and never deletes the
// Node. It talks to the control service through controlclient/nodeclient and
// reads the host only through kernel/sysinfo and kernel/netlink, once, in
// GatherHostFacts.
//
// A node keeps running when the control service is away (fail static): failures are
// logged, counted and retried with backoff, and the loops' liveness checks only report
// a loop that has stopped iterating, never an unreachable control service.
package node
