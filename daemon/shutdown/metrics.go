package shutdown

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are kubelet's graceful shutdown gauges under Plinth's prefix.
type metrics struct {
	start prometheus.Gauge
	end   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		start: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_graceful_shutdown_start_time_seconds",
			Help: "Unix time the last graceful node shutdown started.",
		}),
		end: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "plinth_graceful_shutdown_end_time_seconds",
			Help: "Unix time the last graceful node shutdown ended; 0 while one is under way.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.start, m.end} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// set shows s: a zero time as 0.
func (m *metrics) set(s State) {
	m.start.Set(unixSeconds(s.StartTime))
	m.end.Set(unixSeconds(s.EndTime))
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
