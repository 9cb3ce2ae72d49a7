package containergc

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Kubelet has no metrics of its own for container GC; these follow the shape of its
// image_garbage_collected_total (a counter by reason) under plinth_.
type metrics struct {
	containers *prometheus.CounterVec
	sandboxes  prometheus.Counter
	logDirs    prometheus.Counter
	failures   *prometheus.CounterVec
	duration   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		containers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_container_garbage_collected_total",
			Help: "Dead containers removed by container garbage collection, by reason (deleted_pod, max_per_pod_container, max_containers).",
		}, []string{"reason"}),
		sandboxes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_pod_sandbox_garbage_collected_total",
			Help: "Pod sandboxes removed by container garbage collection.",
		}),
		logDirs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_pod_log_directory_garbage_collected_total",
			Help: "Log directories of deleted pods removed by container garbage collection.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_container_garbage_collection_errors_total",
			Help: "Failed listings and removals in container garbage collection, by kind (container, sandbox, log_directory).",
		}, []string{"kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plinth_container_garbage_collection_duration_seconds",
			Help:    "Duration of container garbage collection runs.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	for _, r := range []string{ReasonDeletedPod, ReasonMaxPerPodContainer, ReasonMaxContainers} {
		m.containers.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.containers, m.sandboxes, m.logDirs, m.failures, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
