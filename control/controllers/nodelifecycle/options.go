package nodelifecycle

import (
	"fmt"
	"math"
	"time"
)

// Options are the controller's timings. The defaults are those of the Kubernetes node
// controller (--node-monitor-period, --node-monitor-grace-period and
// --node-startup-grace-period).
type Options struct {
	// MonitorPeriod is how often every node is checked. Per-node deadlines wake the
	// controller in between, so this is a safety net and the retry period for failed
	// writes rather than the precision of the grace period.
	MonitorPeriod time.Duration
	// GracePeriod is how long a node that has posted a Ready condition may stay silent
	// before its conditions become Unknown.
	GracePeriod time.Duration
	// StartupGracePeriod replaces GracePeriod for a node that has never posted a Ready
	// condition; it is measured from when the controller first saw the node.
	StartupGracePeriod time.Duration

	// EvictionRate is how many nodes per second of a zone get a NoExecute taint (which
	// starts the eviction of their pods) while the zone is Normal or FullDisruption.
	EvictionRate float64
	// SecondaryEvictionRate replaces EvictionRate in a zone in PartialDisruption that
	// has more than LargeClusterSizeThreshold nodes; smaller zones stop tainting.
	SecondaryEvictionRate float64
	// UnhealthyZoneThreshold is the share of not-Ready nodes (with more than two of
	// them) at which a zone is in PartialDisruption.
	UnhealthyZoneThreshold float64
	// LargeClusterSizeThreshold is the zone size above which a partially disrupted zone
	// keeps tainting at SecondaryEvictionRate instead of stopping.
	LargeClusterSizeThreshold int
}

// DefaultOptions returns the reference defaults: 5 s, 50 s and 60 s; 0.1 and 0.01
// nodes/s, 0.55 and 50 nodes.
func DefaultOptions() Options {
	return Options{
		MonitorPeriod:             5 * time.Second,
		GracePeriod:               50 * time.Second,
		StartupGracePeriod:        60 * time.Second,
		EvictionRate:              0.1,
		SecondaryEvictionRate:     0.01,
		UnhealthyZoneThreshold:    0.55,
		LargeClusterSizeThreshold: 50,
	}
}

// Validate reports the first option out of its range: durations must be positive, rates
// not negative (0 stops tainting), the threshold a share in (0, 1].
func (o Options) Validate() error {
	def := DefaultOptions()
	for _, f := range []struct {
		name     string
		got, def time.Duration
	}{
		{"MonitorPeriod", o.MonitorPeriod, def.MonitorPeriod},
		{"GracePeriod", o.GracePeriod, def.GracePeriod},
		{"StartupGracePeriod", o.StartupGracePeriod, def.StartupGracePeriod},
	} {
		if f.got <= 0 {
			return fmt.Errorf("nodelifecycle: option %s: %v is not a positive duration (want > 0, default %v)", f.name, f.got, f.def)
		}
	}
	for _, f := range []struct {
		name     string
		got, def float64
	}{
		{"EvictionRate", o.EvictionRate, def.EvictionRate},
		{"SecondaryEvictionRate", o.SecondaryEvictionRate, def.SecondaryEvictionRate},
	} {
		if !(f.got >= 0) || math.IsInf(f.got, 0) {
			return fmt.Errorf("nodelifecycle: option %s: %v is not a rate in nodes per second (want a finite number >= 0, default %v)", f.name, f.got, f.def)
		}
	}
	if !(o.UnhealthyZoneThreshold > 0 && o.UnhealthyZoneThreshold <= 1) {
		return fmt.Errorf("nodelifecycle: option UnhealthyZoneThreshold: %v is not a share of a zone's nodes (want 0 < x <= 1, default %v)", o.UnhealthyZoneThreshold, def.UnhealthyZoneThreshold)
	}
	if o.LargeClusterSizeThreshold < 0 {
		return fmt.Errorf("nodelifecycle: option LargeClusterSizeThreshold: %d is not a node count (want >= 0, default %d)", o.LargeClusterSizeThreshold, def.LargeClusterSizeThreshold)
	}
	return nil
}
