package endpointslice

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// The names are kube-controller-manager's endpoint_slice_controller_* after the prefix,
// with their buckets.
type metrics struct {
	added, removed *prometheus.HistogramVec
	changed        *prometheus.HistogramVec
	changes        *prometheus.CounterVec
	syncs          *prometheus.CounterVec
	desired        prometheus.Gauge
	numSlices      prometheus.Gauge
	desiredSlices  prometheus.Gauge

	// mu guards perService; the three gauges are its sums, kept by difference.
	mu         sync.Mutex
	perService map[types.NamespacedName]serviceCounts
}

type serviceCounts struct {
	endpoints, slices, desiredSlices int
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	perSync := prometheus.ExponentialBuckets(2, 2, 15)
	m := &metrics{
		added: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_endpoint_slice_controller_endpoints_added_per_sync",
			Help:    "Endpoints added to EndpointSlices in one Service's sync.",
			Buckets: perSync,
		}, nil),
		removed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_endpoint_slice_controller_endpoints_removed_per_sync",
			Help:    "Endpoints removed from EndpointSlices in one Service's sync.",
			Buckets: perSync,
		}, nil),
		changed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_endpoint_slice_controller_endpointslices_changed_per_sync",
			Help:    "EndpointSlices created, updated or deleted in one Service's sync, by the Service's trafficDistribution.",
			Buckets: perSync,
		}, []string{"traffic_distribution"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_endpoint_slice_controller_changes",
			Help: "EndpointSlice writes, by operation (create, update, delete).",
		}, []string{"operation"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_endpoint_slice_controller_syncs",
			Help: "Service syncs, by result (success, error, stale: the cache had not seen the last writes yet).",
		}, []string{"result"}),
		desired: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_endpoint_slice_controller_endpoints_desired",
			Help: "Endpoints the EndpointSlices of every Service should hold.",
		}),
		numSlices: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_endpoint_slice_controller_num_endpoint_slices",
			Help: "EndpointSlices this controller manages, after the last sync of each Service.",
		}),
		desiredSlices: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_endpoint_slice_controller_desired_endpoint_slices",
			Help: "EndpointSlices the endpoints would need if packed perfectly.",
		}),
		perService: map[types.NamespacedName]serviceCounts{},
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.added, m.removed, m.changed, m.changes, m.syncs, m.desired, m.numSlices, m.desiredSlices} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("endpointslice: registering metrics: %w", err)
		}
	}
	return m, nil
}

// setService records a Service's counts after a sync; a zero value forgets it.
func (m *metrics) setService(svc types.NamespacedName, c serviceCounts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.perService[svc]
	if c == (serviceCounts{}) {
		delete(m.perService, svc)
	} else {
		m.perService[svc] = c
	}
	m.desired.Add(float64(c.endpoints - old.endpoints))
	m.numSlices.Add(float64(c.slices - old.slices))
	m.desiredSlices.Add(float64(c.desiredSlices - old.desiredSlices))
}
