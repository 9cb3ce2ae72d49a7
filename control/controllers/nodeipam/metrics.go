package nodeipam

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The names are kube-controller-manager's node_ipam_controller_cidrset_* metrics after
// the prefix, with their clusterCIDR label.
type metrics struct {
	usage       *prometheus.GaugeVec
	allocations *prometheus.CounterVec
	releases    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		usage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_node_ipam_controller_cidrset_usage_cidrs",
			Help: "Share (0 to 1) of the node CIDRs of a cluster CIDR that are allocated.",
		}, []string{"clusterCIDR"}),
		allocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_node_ipam_controller_cidrset_cidrs_allocations_total",
			Help: "Node CIDRs allocated from a cluster CIDR.",
		}, []string{"clusterCIDR"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_node_ipam_controller_cidrset_cidrs_releases_total",
			Help: "Node CIDRs released back to a cluster CIDR.",
		}, []string{"clusterCIDR"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.usage, m.allocations, m.releases} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("nodeipam: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(s *cidrSet) {
	m.usage.WithLabelValues(s.cluster.String()).Set(float64(s.occupied) / float64(s.count))
}
