package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/containergc"
)

// ContainerGCPolicy is the container garbage collection policy the configuration
// describes. The configuration must have passed Validate.
func (c Config) ContainerGCPolicy() containergc.Policy {
	return containergc.Policy{
		MinAge:             c.MinimumContainerTTLDuration.Duration,
		MaxPerPodContainer: int(c.MaximumDeadContainersPerContainer),
		MaxContainers:      int(c.MaximumDeadContainers),
	}
}

// validateGC checks the garbage collection fields one by one.
func (c Config) validateGC() field.ErrorList {
	var errs field.ErrorList
	if d := c.MinimumContainerTTLDuration.Duration; d < 0 {
		errs = append(errs, field.Invalid(field.NewPath("minimumContainerTTLDuration"), d.String(),
			`must be 0 or a positive duration such as "1m"`))
	}
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"maximumDeadContainersPerContainer", c.MaximumDeadContainersPerContainer},
		{"maximumDeadContainers", c.MaximumDeadContainers},
	} {
		if f.value < -1 {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.value,
				"must be a number of containers (0 or more), or -1 for no limit"))
		}
	}
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"imageGCHighThresholdPercent", c.ImageGCHighThresholdPercent},
		{"imageGCLowThresholdPercent", c.ImageGCLowThresholdPercent},
	} {
		if f.value < 0 || f.value > 100 {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.value, "must be a percentage between 0 and 100"))
		}
	}
	if d := c.ImageMinimumGCAge.Duration; d < 0 {
		errs = append(errs, field.Invalid(field.NewPath("imageMinimumGCAge"), d.String(),
			`must be 0 or a positive duration such as "2m"`))
	}
	if d := c.ImageMaximumGCAge.Duration; d < 0 {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), d.String(),
			`must be 0 (off) or a positive duration such as "168h"`))
	}
	return errs
}

// validateGCAcrossFields holds kubelet's rules that compare two GC fields; it runs on
// the merged configuration only.
func (c Config) validateGCAcrossFields() field.ErrorList {
	var errs field.ErrorList
	if c.ImageGCLowThresholdPercent >= c.ImageGCHighThresholdPercent {
		errs = append(errs, field.Invalid(field.NewPath("imageGCLowThresholdPercent"), c.ImageGCLowThresholdPercent,
			fmt.Sprintf("must be less than imageGCHighThresholdPercent (%d)", c.ImageGCHighThresholdPercent)))
	}
	if max, min := c.ImageMaximumGCAge.Duration, c.ImageMinimumGCAge.Duration; max != 0 && max <= min {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), max.String(),
			fmt.Sprintf("must be 0 (off) or longer than imageMinimumGCAge (%s)", min)))
	}
	return errs
}
