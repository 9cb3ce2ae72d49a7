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

// CollectUnused (node-pressure reclaim) deletes every unused image at any disk usage,
// except those in use and those pulled within MinimumAge.
func TestCollectUnusedDeletesEveryUnusedImage(t *testing.T) {
	s, clk := newTestStore(t, RootFSCopy)
	used := storeTestImage(t, s, imagetest.Busybox(t, "/bin/true"), "example.com/used:v1")
	unused := storeTestImage(t, s, twoLayerImage(t), "example.com/unused:v1")
	clk.Step(10 * time.Minute)
	storeTestImage(t, s, imagetest.Busybox(t, "/bin/fresh"), "example.com/fresh:v1")
	inUse := func() (map[string]bool, error) { return map[string]bool{used.ID: true}, nil }
	// Thresholds no test machine's disk reaches: the periodic collection keeps all.
	g := NewImageGC(s, GCPolicy{HighThresholdPercent: 100, LowThresholdPercent: 99, MinimumAge: 2 * time.Minute}, inUse, 0)
	if res, err := g.Collect(context.Background()); err != nil || len(res.Deleted) != 0 {
		t.Fatalf("Collect below the high threshold = %+v, %v; want nothing deleted", res, err)
	}
	res, err := g.CollectUnused(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0] != unused.ID || res.FreedBytes <= 0 {
		t.Fatalf("CollectUnused = %+v; want only %s deleted with bytes freed", res, unused.ID)
	}
	for _, ref := range []string{"example.com/used:v1", "example.com/fresh:v1"} {
		if im, err := s.Lookup(ref); err != nil || im == nil {
			t.Errorf("%s was deleted (%v)", ref, err)
		}
	}
}
