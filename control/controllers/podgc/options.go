package podgc

import (
	"fmt"
	"time"
)

// Options are the collector's settings. The defaults are kube-controller-manager's
// (--terminated-pod-gc-threshold, gcCheckPeriod and quarantineTime).
type Options struct {
	// TerminatedPodThreshold is how many terminated pods may exist before the oldest
	// are deleted; 0 keeps them all.
	TerminatedPodThreshold int
	// CheckPeriod is how often every rule is applied.
	CheckPeriod time.Duration
	// Quarantine is how long a node name missing from the cache waits before a live
	// read decides whether its pods are orphaned.
	Quarantine time.Duration
}

// DefaultTerminatedPodThreshold is kube-controller-manager's
// --terminated-pod-gc-threshold.
const DefaultTerminatedPodThreshold = 12500

// DefaultOptions returns 12500 pods, 20 s and 40 s.
func DefaultOptions() Options {
	return Options{TerminatedPodThreshold: DefaultTerminatedPodThreshold, CheckPeriod: 20 * time.Second, Quarantine: 40 * time.Second}
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	def := DefaultOptions()
	if o.TerminatedPodThreshold < 0 {
		return fmt.Errorf("podgc: option TerminatedPodThreshold: %d is not a pod count (want >= 0, 0 keeps every terminated pod, default %d)", o.TerminatedPodThreshold, def.TerminatedPodThreshold)
	}
	for _, f := range []struct {
		name     string
		got, def time.Duration
	}{
		{"CheckPeriod", o.CheckPeriod, def.CheckPeriod},
		{"Quarantine", o.Quarantine, def.Quarantine},
	} {
		if f.got <= 0 {
			return fmt.Errorf("podgc: option %s: %v is not a positive duration (want > 0, default %v)", f.name, f.got, f.def)
		}
	}
	return nil
}
