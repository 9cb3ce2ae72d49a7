package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are kube-proxy's metrics (names and buckets) under plinth_proxy_.
type metrics struct {
	syncDuration        prometheus.Histogram
	syncFullDuration    prometheus.Histogram
	syncPartialDuration prometheus.Histogram
	lastSync            prometheus.Gauge
	lastQueued          prometheus.Gauge
	programming         prometheus.Histogram
	syncFailures        prometheus.Counter
	noLocalEndpoints    *prometheus.GaugeVec
	serviceChanges      prometheus.Counter
	serviceChangesPend  prometheus.Gauge
	endpointChanges     prometheus.Counter
	endpointChangesPend prometheus.Gauge
	healthz             *prometheus.CounterVec
	livez               *prometheus.CounterVec
	conntrackDeleted    prometheus.Counter
	conntrackFailures   prometheus.Counter
}

// syncBuckets are kube-proxy's sync_proxy_rules_duration_seconds buckets: 1 ms
// doubling 15 times (to about 16 s).
var syncBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// programmingBuckets are kube-proxy's network_programming_duration_seconds buckets:
// 0, 0.25 s, 0.5 s, every second to 59 s, every 5 s to 115 s, every 30 s to 5 min.
func programmingBuckets() []float64 {
	b := []float64{0}
	b = append(b, prometheus.LinearBuckets(0.25, 0.25, 2)...)
	b = append(b, prometheus.LinearBuckets(1, 1, 59)...)
	b = append(b, prometheus.LinearBuckets(60, 5, 12)...)
	b = append(b, prometheus.LinearBuckets(120, 30, 7)...)
	return b
}

const metricsPrefix = "plinth_proxy_"

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricsPrefix + "sync_proxy_rules_duration_seconds", Help: "SyncProxyRules latency in seconds, full and partial syncs.",
			Buckets: syncBuckets,
		}),
		syncFullDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricsPrefix + "sync_full_proxy_rules_duration_seconds", Help: "Latency of full syncs in seconds.",
			Buckets: syncBuckets,
		}),
		syncPartialDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricsPrefix + "sync_partial_proxy_rules_duration_seconds", Help: "Latency of partial syncs in seconds.",
			Buckets: syncBuckets,
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "sync_proxy_rules_last_timestamp_seconds", Help: "The last time proxy rules were successfully synced (Unix seconds).",
		}),
		lastQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "sync_proxy_rules_last_queued_timestamp_seconds", Help: "The last time a sync of proxy rules was queued (Unix seconds).",
		}),
		programming: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricsPrefix + "network_programming_duration_seconds", Help: "In-cluster network programming latency in seconds: from an EndpointSlice's last-change-trigger-time to its rules being applied.",
			Buckets: programmingBuckets(),
		}),
		syncFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "sync_proxy_rules_nftables_sync_failures_total", Help: "Cumulative failed syncs of the nftables rules.",
		}),
		noLocalEndpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricsPrefix + "sync_proxy_rules_no_local_endpoints_total", Help: "Number of service ports with a Local traffic policy and no endpoints on this node (traffic_policy internal or external).",
		}, []string{"traffic_policy"}),
		serviceChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "sync_proxy_rules_service_changes_total", Help: "Cumulative proxy rules Service changes.",
		}),
		serviceChangesPend: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "sync_proxy_rules_service_changes_pending", Help: "Pending proxy rules Service changes.",
		}),
		endpointChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "sync_proxy_rules_endpoint_changes_total", Help: "Cumulative proxy rules EndpointSlice changes.",
		}),
		endpointChangesPend: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "sync_proxy_rules_endpoint_changes_pending", Help: "Pending proxy rules EndpointSlice changes.",
		}),
		healthz: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "proxy_healthz_total", Help: "Cumulative proxy /healthz answers by HTTP status code.",
		}, []string{"code"}),
		livez: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "proxy_livez_total", Help: "Cumulative proxy /livez answers by HTTP status code.",
		}, []string{"code"}),
		conntrackDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "conntrack_reconciler_deleted_entries_total", Help: "Cumulative stale UDP conntrack entries deleted.",
		}),
		conntrackFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "conntrack_cleanup_failures_total", Help: "Cumulative failures deleting stale UDP conntrack entries.",
		}),
	}
	for _, policy := range []string{"internal", "external"} {
		m.noLocalEndpoints.WithLabelValues(policy)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{
		m.syncDuration, m.syncFullDuration, m.syncPartialDuration, m.lastSync, m.lastQueued, m.programming,
		m.syncFailures, m.noLocalEndpoints, m.serviceChanges, m.serviceChangesPend, m.endpointChanges,
		m.endpointChangesPend, m.healthz, m.livez, m.conntrackDeleted, m.conntrackFailures,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
