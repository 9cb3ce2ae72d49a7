package apiserver

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are kube-apiserver's request metrics under the plinth prefix.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// watchExpired counts watches ended with 410 Gone because their resourceVersion
	// was compacted: each forces a client to relist.
	watchExpired *prometheus.CounterVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_apiserver_request_total",
			Help: "API requests by verb, resource and HTTP response code.",
		}, []string{"verb", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "plinth_apiserver_request_duration_seconds",
			Help: "API request latency by verb and resource (watches count their whole life).",
			// kube-apiserver's apiserver_request_duration_seconds buckets.
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "resource"}),
		watchExpired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_apiserver_watch_expired_total",
			Help: "Watches ended with 410 Gone because their resourceVersion was compacted, by resource.",
		}, []string{"resource"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.total, m.duration, m.watchExpired} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *requestMetrics) observe(verb, resource string, code int, d time.Duration) {
	m.total.WithLabelValues(verb, resource, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(verb, resource).Observe(d.Seconds())
}
