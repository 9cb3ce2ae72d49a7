package nodelifecycle

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	statusUnknown prometheus.Counter
	nodes         prometheus.Gauge
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
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.statusUnknown, m.nodes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("nodelifecycle: registering metrics: %w", err)
		}
	}
	return m, nil
}
