// Package proxy is the control half of plinthd's Service proxy (kube-proxy's nftables
// mode): it watches Services, EndpointSlices and this node's Node through informers
// built from the ListerWatchers the wiring hands in, decides per service port and IP
// family which endpoints this node uses (readiness, the serving-terminating fallback,
// internal and external traffic policies, topology hints), and hands the result to a
// rule syncer as a desired.Snapshot with desired.Changes: which service ports changed
// since the last sync and which UDP conntrack flows went stale.
//
// Syncs coalesce over minSyncPeriod, a full resync runs every syncPeriod, and a failed
// sync is retried with backoff (all on an injected clock). After each successful sync
// the stale UDP flows are deleted through a conntrack cleaner. It serves kube-proxy's
// /healthz and /livez on its own address (default 0.0.0.0:10256), the per-Service
// health checks on LoadBalancer Services' healthCheckNodePorts, and exports
// kube-proxy's metrics under plinth_proxy_.
//
// It owns the informers, the sync loop and the health servers' listeners and
// goroutines it starts in Run, all stopped before Run returns. It touches the kernel only through the Syncer
// and ConntrackCleaner it is given, and the API only through the ListerWatchers.
package proxy
