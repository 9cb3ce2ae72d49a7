package podgc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The reasons of the metrics' reason label, kube-controller-manager's values.
const (
	reasonTerminated   = "terminated"
	reasonOutOfService = "out-of-service"
	reasonOrphaned     = "orphaned"
	reasonUnscheduled  = "unscheduled"
)

// The names follow kube-controller-manager's pod_gc_collector_force_delete_* metrics
// after the prefix, with their namespace and reason labels. Like them, the first
// counts every attempt and the second the failed ones.
type metrics struct {
	deleting *prometheus.CounterVec
	errors   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deleting: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_podgc_force_delete_pods_total",
			Help: "Pods the pod garbage collector force-deleted (attempts), by namespace and reason (terminated, out-of-service, orphaned, unscheduled).",
		}, []string{"namespace", "reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_podgc_force_delete_pod_errors_total",
			Help: "Failed force deletions by the pod garbage collector, by namespace and reason.",
		}, []string{"namespace", "reason"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deleting, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("podgc: registering metrics: %w", err)
		}
	}
	return m, nil
}
