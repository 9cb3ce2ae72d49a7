package node

import (
	"github.com/prometheus/client_golang/prometheus"
)

const (
	resultSuccess = "success"
	resultError   = "error"
)

type agentMetrics struct {
	leaseRenews        *prometheus.CounterVec
	leaseRenewDuration prometheus.Histogram
	leaseLastRenew     prometheus.Gauge
	statusUpdates      *prometheus.CounterVec
}

func newAgentMetrics(reg prometheus.Registerer) (*agentMetrics, error) {
	m := &agentMetrics{
		leaseRenews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_node_lease_renew_total",
			Help: "Node Lease renewal attempts, by result (success or error).",
		}, []string{"result"}),
		leaseRenewDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plinth_node_lease_renew_duration_seconds",
			Help:    "Time taken by one Node Lease renewal attempt, including refetches after conflicts.",
			Buckets: prometheus.DefBuckets,
		}),
		leaseLastRenew: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_node_lease_last_renew_timestamp_seconds",
			Help: "Unix time of the last successful Node Lease renewal.",
		}),
		statusUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_node_status_update_total",
			Help: "Node status reports sent, by result (success or error); unchanged status within the report frequency is not sent and not counted.",
		}, []string{"result"}),
	}
	// Both results exist from the start, so a rate() over errors reads 0, not nothing.
	for _, r := range []string{resultSuccess, resultError} {
		m.leaseRenews.WithLabelValues(r)
		m.statusUpdates.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.leaseRenews, m.leaseRenewDuration, m.leaseLastRenew, m.statusUpdates} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
