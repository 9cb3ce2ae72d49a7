package images

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

func TestImageGCRunsEveryPeriodAndOnTrigger(t *testing.T) {
	s, clk := newTestStore(t, RootFSCopy)
	reg := prometheus.NewRegistry()
	var err error
	if s.metrics, err = newStoreMetrics(reg); err != nil {
		t.Fatal(err)
	}
	old := storeTestImage(t, s, imagetest.Busybox(t, "/bin/true"), "example.com/old:v1")
	policy := GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 99, MaximumAge: time.Hour}
	done := make(chan gcOutcome)
	g := NewImageGC(s, policy, nil, 0)
	g.done = done
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { g.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	// Triggered before any image is old enough: nothing deleted.
	g.Trigger()
	if out := <-done; out.err != nil || len(out.result.Deleted) != 0 {
		t.Fatalf("early collection: %+v", out)
	}
	// Two hours later the periodic run deletes the unused old image by age.
	clk.Step(2 * time.Hour)
	if out := <-done; out.err != nil || len(out.result.Deleted) != 1 || out.result.Deleted[0] != old.ID {
		t.Fatalf("periodic collection: %+v; want %s deleted", out, old.ID)
	}
	if got := testutil.ToFloat64(s.metrics.gcCollected.WithLabelValues(gcReasonAge)); got != 1 {
		t.Fatalf("plinth_image_garbage_collected_total{reason=age} = %v, want 1", got)
	}
}

func TestImageSizeLabels(t *testing.T) {
	for size, want := range map[int64]string{0: "0-10MB", 10<<20 - 1: "0-10MB", 10 << 20: "10MB-100MB", 3 << 30: "1GB-5GB", 200 << 30: "GT100GB"} {
		if got := imageSizeLabel(size); got != want {
			t.Errorf("imageSizeLabel(%d) = %s, want %s", size, got, want)
		}
	}
}
