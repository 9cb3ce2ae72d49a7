package nodelifecycle

import (
	"fmt"
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
}

// DefaultOptions returns the reference defaults: 5 s, 50 s and 60 s.
func DefaultOptions() Options {
	return Options{
		MonitorPeriod:      5 * time.Second,
		GracePeriod:        50 * time.Second,
		StartupGracePeriod: 60 * time.Second,
	}
}

// Validate reports the first option that is not a positive duration.
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
	return nil
}
