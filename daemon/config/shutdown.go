package config

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/pressure"
)

// ShutdownGracePeriodByPodPriority is one priority band of graceful node shutdown, as
// kubelet's: pods whose priority is at least Priority (and below the next band's)
// get ShutdownGracePeriodSeconds to stop.
type ShutdownGracePeriodByPodPriority struct {
	// Priority is the band's lowest pod priority.
	Priority int32 `json:"priority"`
	// ShutdownGracePeriodSeconds is the time the band's pods get to stop.
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// minShutdownGracePeriod is kubelet's floor for a non-zero shutdown grace period: a
// shorter one ("100ms") is almost certainly a typo and gives pods no time at all.
const minShutdownGracePeriod = time.Second

// validateShutdown checks the graceful node shutdown fields one by one.
func (c Config) validateShutdown() field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"shutdownGracePeriod", c.ShutdownGracePeriod.Duration},
		{"shutdownGracePeriodCriticalPods", c.ShutdownGracePeriodCriticalPods.Duration},
	} {
		if f.d < 0 || (f.d > 0 && f.d < minShutdownGracePeriod) {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.d.String(),
				fmt.Sprintf(`must be 0 (graceful node shutdown off) or at least %s, such as "30s"`, minShutdownGracePeriod)))
		}
	}
	seen := map[int32]int{}
	for i, b := range c.ShutdownGracePeriodByPodPriority {
		p := field.NewPath("shutdownGracePeriodByPodPriority").Index(i)
		if b.ShutdownGracePeriodSeconds < 0 {
			errs = append(errs, field.Invalid(p.Child("shutdownGracePeriodSeconds"), b.ShutdownGracePeriodSeconds,
				"must be 0 or a positive number of seconds"))
		}
		if j, dup := seen[b.Priority]; dup {
			errs = append(errs, field.Duplicate(p.Child("priority"),
				fmt.Sprintf("%d (already the priority of shutdownGracePeriodByPodPriority[%d])", b.Priority, j)))
		}
		seen[b.Priority] = i
	}
	return errs
}

// validateShutdownAcrossFields holds kubelet's rules that compare shutdown fields; they
// run on the merged configuration only (a drop-in may set one and another the other).
func (c Config) validateShutdownAcrossFields() field.ErrorList {
	var errs field.ErrorList
	grace, critical := c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration
	if critical > grace {
		errs = append(errs, field.Invalid(field.NewPath("shutdownGracePeriodCriticalPods"), critical.String(),
			fmt.Sprintf("must not exceed shutdownGracePeriod (%s): the critical pods' time is part of it", grace)))
	}
	if (grace > 0 || critical > 0) && len(c.ShutdownGracePeriodByPodPriority) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("shutdownGracePeriodByPodPriority"),
			fmt.Sprintf("cannot be set together with shutdownGracePeriod (%s) and shutdownGracePeriodCriticalPods (%s); use one or the other",
				grace, critical)))
	}
	return errs
}

// ShutdownBands is the graceful node shutdown configuration as priority bands, lowest
// priority first: shutdownGracePeriodByPodPriority as written, or shutdownGracePeriod
// and shutdownGracePeriodCriticalPods turned into two bands as kubelet does (priority
// 0 gets the difference, priority 2000000000 the critical pods' time). Nil means the
// feature is off. The configuration must have passed Validate.
func (c Config) ShutdownBands() []ShutdownBand {
	var bands []ShutdownBand
	if len(c.ShutdownGracePeriodByPodPriority) > 0 {
		for _, b := range c.ShutdownGracePeriodByPodPriority {
			bands = append(bands, ShutdownBand{Priority: b.Priority, GracePeriod: time.Duration(b.ShutdownGracePeriodSeconds) * time.Second})
		}
	} else if grace := c.ShutdownGracePeriod.Duration; grace > 0 {
		critical := c.ShutdownGracePeriodCriticalPods.Duration
		bands = []ShutdownBand{
			{Priority: 0, GracePeriod: grace - critical},
			{Priority: pressure.SystemCriticalPriority, GracePeriod: critical},
		}
	}
	slices.SortFunc(bands, func(a, b ShutdownBand) int { return cmp.Compare(a.Priority, b.Priority) })
	return bands
}

// ShutdownBand is one priority band as daemon/shutdown uses it.
type ShutdownBand struct {
	Priority    int32
	GracePeriod time.Duration
}
