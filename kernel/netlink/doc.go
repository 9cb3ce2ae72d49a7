// Package netlink answers the node's questions about its own network configuration
// through rtnetlink (github.com/vishvananda/netlink): which source address the default
// route would use, and which addresses the links carry.
//
// It owns nothing and only reads: it lists routes in the main table and addresses of
// links in the calling thread's network namespace. It never sends packets and never
// asks the kernel for a route towards an outside address.
package netlink
