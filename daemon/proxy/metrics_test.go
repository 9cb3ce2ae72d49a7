package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricValue reads one sample (counter, gauge, or a histogram's count) of name whose
// labels include want, from reg.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, want)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

func TestMetricsNamesAndBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.syncDuration.Observe(0.002)
	m.programming.Observe(1.5)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	buckets := map[string]int{}
	for _, f := range families {
		if h := f.GetMetric()[0].GetHistogram(); h != nil {
			buckets[f.GetName()] = len(h.GetBucket())
		}
	}
	// kube-proxy's buckets: 15 exponential from 1 ms; 0 + 2 + 59 + 12 + 7 = 81.
	if buckets["plinth_proxy_sync_proxy_rules_duration_seconds"] != 15 {
		t.Errorf("sync duration buckets = %d, want 15", buckets["plinth_proxy_sync_proxy_rules_duration_seconds"])
	}
	if buckets["plinth_proxy_network_programming_duration_seconds"] != 81 {
		t.Errorf("network programming buckets = %d, want 81", buckets["plinth_proxy_network_programming_duration_seconds"])
	}
	if _, err := newMetrics(reg); err == nil {
		t.Error("registering the metrics twice in one registry succeeded")
	}
}
