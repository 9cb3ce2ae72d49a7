package images

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GC reasons, as kubelet labels image_garbage_collected_total.
const (
	gcReasonAge   = "age"
	gcReasonSpace = "space"
)

// imageSizeBuckets label pull durations by image size, with kubelet's bounds and labels.
var imageSizeBuckets = []struct {
	lowerBound int64
	label      string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

func imageSizeLabel(size int64) string {
	label := imageSizeBuckets[0].label
	for _, b := range imageSizeBuckets {
		if size >= b.lowerBound {
			label = b.label
		}
	}
	return label
}

type storeMetrics struct {
	pullDuration *prometheus.HistogramVec
	gcCollected  *prometheus.CounterVec
	pulls        *prometheus.CounterVec
}

// newStoreMetrics registers the store's metrics on reg (none when reg is nil):
// kubelet's image_pull_duration_seconds and image_garbage_collected_total under the
// plinth_ prefix, and pull attempts by result.
func newStoreMetrics(reg prometheus.Registerer) (*storeMetrics, error) {
	m := &storeMetrics{
		pullDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plinth_image_pull_duration_seconds",
			Help:    "Duration of image pulls that downloaded an image, by image size.",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}, []string{"image_size_in_bytes"}),
		gcCollected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_image_garbage_collected_total",
			Help: "Images deleted by image garbage collection, by reason (age or space).",
		}, []string{"reason"}),
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_image_pulls_total",
			Help: "Image pulls tried, by result (success, error); pulls held back by the back-off are not counted.",
		}, []string{"result"}),
	}
	for _, r := range []string{gcReasonAge, gcReasonSpace} {
		m.gcCollected.WithLabelValues(r)
	}
	for _, r := range []string{"success", "error"} {
		m.pulls.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.pullDuration, m.gcCollected, m.pulls} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *storeMetrics) observePull(err error, downloaded bool, size int64, took time.Duration) {
	if err != nil {
		m.pulls.WithLabelValues("error").Inc()
		return
	}
	m.pulls.WithLabelValues("success").Inc()
	if downloaded {
		m.pullDuration.WithLabelValues(imageSizeLabel(size)).Observe(took.Seconds())
	}
}
