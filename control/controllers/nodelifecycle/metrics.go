package nodelifecycle

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The zone metrics keep the names of kube-controller-manager's node_collector_* metrics
// after the prefix. zone is "region:zone", "" for nodes without topology labels.
type metrics struct {
	statusUnknown prometheus.Counter
	nodes         prometheus.Gauge
	zoneHealth    *prometheus.GaugeVec
	zoneSize      *prometheus.GaugeVec
	unhealthy     *prometheus.GaugeVec
	evictions     *prometheus.CounterVec
}

// newMetrics creates the controller's metrics and registers them with reg; a nil reg
// leaves them unregistered.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		statusUnknown: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_nodelifecycle_node_status_unknown_total",
			Help: "Times the controller set a node's conditions to Unknown because its heartbeats stopped.",
		}),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_nodelifecycle_nodes",
			Help: "Nodes whose health the controller is tracking.",
		}),
		zoneHealth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_nodelifecycle_zone_health",
			Help: "Percentage of Ready nodes among a zone's counted nodes (100 for a zone without any).",
		}, []string{"zone"}),
		zoneSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_nodelifecycle_zone_size",
			Help: "Nodes of a zone that count toward its health (those without node.kubernetes.io/exclude-disruption).",
		}, []string{"zone"}),
		unhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_nodelifecycle_unhealthy_nodes_in_zone",
			Help: "Counted nodes of a zone whose Ready condition is not True.",
		}, []string{"zone"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_nodelifecycle_evictions_total",
			Help: "NoExecute taints added to nodes of a zone, each of which starts evicting the node's pods.",
		}, []string{"zone"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.statusUnknown, m.nodes, m.zoneHealth, m.zoneSize, m.unhealthy, m.evictions} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("nodelifecycle: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) setZone(zone string, n zoneCount) {
	m.zoneHealth.WithLabelValues(zone).Set(n.healthPercent())
	m.zoneSize.WithLabelValues(zone).Set(float64(n.size()))
	m.unhealthy.WithLabelValues(zone).Set(float64(n.notReady))
}

// forgetZone drops the gauges of a zone that has no nodes left; the eviction counter
// stays, as counters do.
func (m *metrics) forgetZone(zone string) {
	m.zoneHealth.DeleteLabelValues(zone)
	m.zoneSize.DeleteLabelValues(zone)
	m.unhealthy.DeleteLabelValues(zone)
}
