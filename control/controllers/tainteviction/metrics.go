package tainteviction

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The names follow kube-controller-manager's taint_eviction_controller_* metrics after
// the prefix, and the duration keeps their buckets.
type metrics struct {
	deletions prometheus.Counter
	latency   prometheus.Histogram
	scheduled prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deletions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_tainteviction_pod_deletions_total",
			Help: "Pods deleted because of NoExecute taints they did not tolerate (long enough).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plinth_tainteviction_pod_deletion_duration_seconds",
			Help:    "Time from a pod's eviction deadline to its deletion.",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240},
		}),
		scheduled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_tainteviction_scheduled_deletions",
			Help: "Pods with a deletion deadline that has not come yet.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deletions, m.latency, m.scheduled} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("tainteviction: registering metrics: %w", err)
		}
	}
	return m, nil
}
