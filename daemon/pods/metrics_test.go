package pods

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// observations is how many values a histogram (of a vector, by label value) holds.
func observations(t *testing.T, c prometheus.Collector) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	c.Collect(ch)
	close(ch)
	var n uint64
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		n += out.GetHistogram().GetSampleCount()
	}
	return n
}

func TestMetricsRegisterKubeletNamesAndNilRecordsNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	m.operation(OpStartContainer, start, start.Add(40*time.Millisecond))
	m.podStarted(300 * time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"plinth_runtime_operations_duration_seconds", "plinth_pod_start_duration_seconds"} {
		if !got[name] {
			t.Errorf("%s not registered; got %v", name, got)
		}
	}
	if n := observations(t, m.operations.WithLabelValues(OpStartContainer).(prometheus.Histogram)); n != 1 {
		t.Errorf("start_container observations = %d, want 1", n)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering the metrics twice on one registry succeeded")
	}
	var none *Metrics
	none.operation(OpPullImage, start, start) // must not panic
	none.podStarted(time.Second)
}
