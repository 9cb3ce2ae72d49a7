// Package nftrules turns the proxy's desired state (daemon/proxy/desired) into
// nftables rules the way kube-proxy's nftables mode does: one `ip` and one `ip6` table
// named plinth, verdict maps keyed by address . protocol . port, a chain per service
// port choosing an endpoint with numgen, a DNAT chain per endpoint. README.md states
// the table, chain, priority and mark contracts.
//
// Syncer keeps an in-memory record of what it committed, so a partial sync sends only
// the difference for the changed service ports; every sync is one atomic batch
// through a kernel/nft Programmer. It owns the two plinth tables and nothing else, and
// never reads the kernel to decide what to write (Dump reads it, for operators).
package nftrules
