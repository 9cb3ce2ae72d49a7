package bench

import (
	"math"
	"testing"
)

func TestParseHistogramPicksOneSeriesAndSubtracts(t *testing.T) {
	before := parseHistogram(`plinth_x_bucket{resource="leases",verb="PUT",le="0.005"} 1
plinth_x_bucket{resource="leases",verb="PUT",le="0.05"} 2
plinth_x_bucket{resource="leases",verb="PUT",le="+Inf"} 2
plinth_x_bucket{resource="nodes",verb="PUT",le="0.05"} 100
`, "plinth_x", `resource="leases",verb="PUT"`)
	after := parseHistogram(`plinth_x_bucket{resource="leases",verb="PUT",le="0.005"} 5
plinth_x_bucket{resource="leases",verb="PUT",le="0.05"} 9
plinth_x_bucket{resource="leases",verb="PUT",le="+Inf"} 12
plinth_x_bucket{resource="nodes",verb="PUT",le="0.05"} 200
`, "plinth_x", `resource="leases",verb="PUT"`)
	d := after.since(before)
	if d.total != 10 {
		t.Fatalf("total %v, want 10", d.total)
	}
	if got := d.fractionWithin(0.05); math.Abs(got-0.7) > 1e-9 {
		t.Fatalf("within 50ms %v, want 0.7", got)
	}
	if got := d.fractionWithin(0.005); math.Abs(got-0.4) > 1e-9 {
		t.Fatalf("within 5ms %v, want 0.4", got)
	}
	if got := d.fractionWithin(0.3); got != 0 {
		t.Fatalf("a bound the histogram lacks gave %v, want 0", got)
	}
}
