package gc

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

type metrics struct {
	deletions *prometheus.CounterVec
	orphaned  prometheus.Counter
	resources prometheus.Gauge
	objects   prometheus.GaugeFunc
	queue     *queueMetrics
}

// newMetrics creates the collector's metrics and registers them with reg (nil: not
// registered). objects reports the size of the graph when scraped.
func newMetrics(reg prometheus.Registerer, objects func() float64) (*metrics, error) {
	m := &metrics{
		deletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_gc_deletions_total",
			Help: "Objects the garbage collector deleted because their owners were gone or being deleted in the foreground, by resource.",
		}, []string{"resource"}),
		orphaned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_gc_orphaned_total",
			Help: "Owner references the garbage collector removed from dependents: of owners deleted with the Orphan policy, of absent owners next to an existing one, and of Foreground owners next to an existing one.",
		}),
		resources: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_gc_monitored_resources",
			Help: "Resources the garbage collector watches.",
		}),
		objects: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plinth_gc_graph_objects",
			Help: "Objects in the garbage collector's dependency graph.",
		}, objects),
		queue: newQueueMetrics(),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range append([]prometheus.Collector{m.deletions, m.orphaned, m.resources, m.objects}, m.queue.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("gc: registering metrics: %w", err)
		}
	}
	return m, nil
}

// queueMetrics is a workqueue.MetricsProvider for the collector's one queue, with
// client-go's workqueue metric names after the plinth_gc_ prefix.
type queueMetrics struct {
	depth          prometheus.Gauge
	adds           prometheus.Counter
	latency        prometheus.Histogram
	workDuration   prometheus.Histogram
	unfinished     prometheus.Gauge
	longestRunning prometheus.Gauge
	retries        prometheus.Counter
}

func newQueueMetrics() *queueMetrics {
	// client-go's workqueue buckets: 10 ns to 10 s.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	return &queueMetrics{
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_gc_workqueue_depth", Help: "Objects waiting in the garbage collector's work queue.",
		}),
		adds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_gc_workqueue_adds_total", Help: "Adds to the garbage collector's work queue.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "plinth_gc_workqueue_queue_duration_seconds", Help: "How long an item waits in the garbage collector's work queue.",
			Buckets: buckets,
		}),
		workDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "plinth_gc_workqueue_work_duration_seconds", Help: "How long processing one item of the garbage collector's work queue takes.",
			Buckets: buckets,
		}),
		unfinished: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_gc_workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration.",
		}),
		longestRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_gc_workqueue_longest_running_processor_seconds", Help: "Seconds the longest running item of the garbage collector's work queue has been processed.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_gc_workqueue_retries_total", Help: "Retries (rate-limited re-adds) in the garbage collector's work queue.",
		}),
	}
}

func (q *queueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.depth, q.adds, q.latency, q.workDuration, q.unfinished, q.longestRunning, q.retries}
}

func (q *queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric            { return q.depth }
func (q *queueMetrics) NewAddsMetric(string) workqueue.CounterMetric           { return q.adds }
func (q *queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric      { return q.latency }
func (q *queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric { return q.workDuration }
func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.unfinished
}
func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.longestRunning
}
func (q *queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return q.retries }
