package pressure

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the pressure manager's Prometheus metrics.
type metrics struct {
	signalValue     *prometheus.GaugeVec
	signalThreshold *prometheus.GaugeVec
	crossings       *prometheus.CounterVec
	evaluations     *prometheus.CounterVec
	feedActive      *prometheus.GaugeVec
	evictions       *prometheus.CounterVec
	reclaimed       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		signalValue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_eviction_signal_value",
			Help: "Amount available of each eviction signal at the last evaluation: bytes for memory and filesystem space, a count for inodes and process IDs. Absent while the signal cannot be observed.",
		}, []string{"signal"}),
		signalThreshold: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_eviction_signal_threshold",
			Help: "Eviction threshold of each signal resolved against its capacity at the last evaluation, in the signal's unit.",
		}, []string{"signal", "kind"}),
		crossings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_eviction_threshold_crossings_total",
			Help: "Times a threshold on the signal went from not crossed to crossed.",
		}, []string{"signal"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_eviction_evaluations_total",
			Help: "Pressure evaluations by what triggered them (periodic, or an event such as psi or oom-kill).",
		}, []string{"trigger"}),
		feedActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_eviction_feed_active",
			Help: "1 when the source of pressure information is working, 0 when it is missing or failed.",
		}, []string{"feed"}),
		// kubelet_evictions, with the plinth prefix.
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_evictions",
			Help: "Pods evicted by the pressure manager, by the signal that was crossed.",
		}, []string{"eviction_signal"}),
		reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_eviction_node_reclaimed_total",
			Help: "Amount freed by node-level reclaim (image and container garbage collection) before evicting, in the signal's unit.",
		}, []string{"signal"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.signalValue, m.signalThreshold, m.crossings, m.evaluations,
		m.feedActive, m.evictions, m.reclaimed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// record publishes one evaluation.
func (m *metrics) record(ev evaluation) {
	m.evaluations.WithLabelValues(string(ev.trigger)).Inc()
	for _, s := range signalOrder {
		if sample, ok := ev.samples[s]; ok {
			m.signalValue.WithLabelValues(string(s)).Set(float64(sample.Available))
		} else {
			m.signalValue.DeleteLabelValues(string(s))
		}
	}
	for _, r := range ev.results {
		if !r.Observed {
			m.signalThreshold.DeleteLabelValues(string(r.Signal), r.Kind())
			continue
		}
		m.signalThreshold.WithLabelValues(string(r.Signal), r.Kind()).Set(float64(r.Target))
		if r.NewlyCrossed {
			m.crossings.WithLabelValues(string(r.Signal)).Inc()
		}
	}
	for _, f := range ev.feeds {
		v := 0.0
		if f.Active {
			v = 1
		}
		m.feedActive.WithLabelValues(f.Name).Set(v)
	}
}
