package scheduler

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The names are kube-scheduler's after the prefix, with their buckets.
type metrics struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
	pending  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_scheduler_schedule_attempts_total",
			Help: "Attempts to schedule pods, by result (scheduled, unschedulable, error).",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_scheduler_scheduling_attempt_duration_seconds",
			Help:    "Time from the start of a scheduling attempt to its binding or failure, by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"result"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_scheduler_pending_pods",
			Help: "Pods waiting to be scheduled, by queue (active: to be tried; unschedulable: waiting for a cluster change).",
		}, []string{"queue"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.attempts, m.duration, m.pending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("scheduler: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(result string, took time.Duration) {
	m.attempts.WithLabelValues(result).Inc()
	m.duration.WithLabelValues(result).Observe(took.Seconds())
}
