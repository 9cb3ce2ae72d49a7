package namespace

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deletions *prometheus.CounterVec
	finalized prometheus.Counter
}

// newMetrics creates the controller's metrics and registers them with reg (nil: not
// registered).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_namespace_content_deletions_total",
			Help: "Objects the namespace controller deleted from namespaces being deleted, by resource.",
		}, []string{"resource"}),
		finalized: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_namespace_finalized_total",
			Help: "Namespaces the namespace controller emptied and released by removing the kubernetes finalizer.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deletions, m.finalized} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("namespace: registering metrics: %w", err)
		}
	}
	return m, nil
}
