package pods

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation types of plinth_runtime_operations_duration_seconds: kubelet's CRI
// operation names for the steps a pod worker takes.
const (
	// OpRunPodSandbox is the pod's setup: its cgroup, network and sandbox directory.
	OpRunPodSandbox = "run_podsandbox"
	// OpPullImage is EnsureImage: a lookup when the image is present, else a pull.
	OpPullImage = "pull_image"
	// OpCreateContainer is the root filesystem, the bundle and `runc create` through
	// the shim.
	OpCreateContainer = "create_container"
	// OpStartContainer is `runc start`.
	OpStartContainer = "start_container"
)

// Metrics are the pod runtime's metrics, kubelet's under the plinth_ prefix. A nil
// *Metrics records nothing.
type Metrics struct {
	operations *prometheus.HistogramVec
	podStart   prometheus.Histogram
}

// NewMetrics registers the pod runtime's metrics on reg (none when reg is nil):
// kubelet's runtime_operations_duration_seconds (by operation_type, with its
// buckets) and pod_start_duration_seconds (first seen by the node to Running, with
// its buckets).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		operations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_runtime_operations_duration_seconds",
			Help:    "Duration in seconds of the pod runtime's operations, by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plinth_pod_start_duration_seconds",
			Help:    "Duration in seconds from plinthd seeing a pod for the first time to the pod starting to run.",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}),
	}
	for _, op := range []string{OpRunPodSandbox, OpPullImage, OpCreateContainer, OpStartContainer} {
		m.operations.WithLabelValues(op)
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.operations, m.podStart} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

// operation records that op took from start to now.
func (m *Metrics) operation(op string, start, now time.Time) {
	if m != nil {
		m.operations.WithLabelValues(op).Observe(now.Sub(start).Seconds())
	}
}

// podStarted records a pod's time from first seen to Running.
func (m *Metrics) podStarted(d time.Duration) {
	if m != nil {
		m.podStart.Observe(d.Seconds())
	}
}
