package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/pressure"
)

func TestShutdownOffByDefault(t *testing.T) {
	c := Defaults()
	if c.ShutdownGracePeriod.Duration != 0 || c.ShutdownGracePeriodCriticalPods.Duration != 0 || c.ShutdownGracePeriodByPodPriority != nil {
		t.Errorf("shutdown defaults = %v / %v / %v, want all off", c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriodByPodPriority)
	}
	if b := c.ShutdownBands(); b != nil {
		t.Errorf("ShutdownBands() = %v by default, want nil (feature off)", b)
	}
}

func TestShutdownBandsFromTheTwoPeriods(t *testing.T) {
	c := Defaults()
	c.ShutdownGracePeriod.Duration = 30 * time.Second
	c.ShutdownGracePeriodCriticalPods.Duration = 10 * time.Second
	want := []ShutdownBand{{Priority: 0, GracePeriod: 20 * time.Second}, {Priority: pressure.SystemCriticalPriority, GracePeriod: 10 * time.Second}}
	if got := c.ShutdownBands(); !slices.Equal(got, want) {
		t.Errorf("ShutdownBands() = %v, want %v", got, want)
	}
	if pressure.SystemCriticalPriority != 2000000000 {
		t.Errorf("critical band starts at %d, want system-cluster-critical's 2000000000", pressure.SystemCriticalPriority)
	}
}

func TestShutdownBandsByPriorityAreSorted(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": `shutdownGracePeriodByPodPriority:
- {priority: 100000, shutdownGracePeriodSeconds: 20}
- {priority: 0, shutdownGracePeriodSeconds: 5}
- {priority: 2000000000, shutdownGracePeriodSeconds: 10}
`})
	c, _ := mustLoadDir(t, dir)
	want := []ShutdownBand{{0, 5 * time.Second}, {100000, 20 * time.Second}, {2000000000, 10 * time.Second}}
	if got := c.ShutdownBands(); !slices.Equal(got, want) {
		t.Errorf("ShutdownBands() = %v, want %v", got, want)
	}
}

func TestShutdownValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string
		value  string
	}{
		{"negative grace", func(c *Config) { c.ShutdownGracePeriod.Duration = -time.Second }, "shutdownGracePeriod", `"-1s"`},
		{"sub-second grace", func(c *Config) { c.ShutdownGracePeriod.Duration = 500 * time.Millisecond }, "shutdownGracePeriod", `"500ms"`},
		{"negative critical", func(c *Config) {
			c.ShutdownGracePeriod.Duration = time.Minute
			c.ShutdownGracePeriodCriticalPods.Duration = -time.Second
		}, "shutdownGracePeriodCriticalPods", `"-1s"`},
		{"critical above total", func(c *Config) {
			c.ShutdownGracePeriod.Duration = 10 * time.Second
			c.ShutdownGracePeriodCriticalPods.Duration = 20 * time.Second
		}, "shutdownGracePeriodCriticalPods", "shutdownGracePeriod (10s)"},
		{"critical without total", func(c *Config) { c.ShutdownGracePeriodCriticalPods.Duration = 5 * time.Second }, "shutdownGracePeriodCriticalPods", `"5s"`},
		{"bands with periods", func(c *Config) {
			c.ShutdownGracePeriod.Duration = 30 * time.Second
			c.ShutdownGracePeriodByPodPriority = []ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 10}}
		}, "shutdownGracePeriodByPodPriority", "shutdownGracePeriod (30s)"},
		{"negative band seconds", func(c *Config) {
			c.ShutdownGracePeriodByPodPriority = []ShutdownGracePeriodByPodPriority{{Priority: 0, ShutdownGracePeriodSeconds: 10}, {Priority: 5, ShutdownGracePeriodSeconds: -1}}
		}, "shutdownGracePeriodByPodPriority[1].shutdownGracePeriodSeconds", "-1"},
		{"duplicate band priority", func(c *Config) {
			c.ShutdownGracePeriodByPodPriority = []ShutdownGracePeriodByPodPriority{{Priority: 7, ShutdownGracePeriodSeconds: 10}, {Priority: 7, ShutdownGracePeriodSeconds: 3}}
		}, "shutdownGracePeriodByPodPriority[1].priority", "shutdownGracePeriodByPodPriority[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() accepted it")
			}
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v holds no *field.Error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q does not name field %q and value %s", err, tc.field, tc.value)
			}
		})
	}
	ok := Defaults()
	ok.ShutdownGracePeriod.Duration = 30 * time.Second
	ok.ShutdownGracePeriodCriticalPods.Duration = 30 * time.Second
	if err := ok.Validate(); err != nil {
		t.Errorf("all of the time for critical pods refused: %v", err)
	}
}

// A bad value in a file is named with the file, as every other field's.
func TestShutdownLoadErrorNamesTheFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": "shutdownGracePeriod: 30\n"})
	_, _, err := loadDir(t, dir)
	if err == nil || !strings.Contains(err.Error(), "plinthd.yaml") || !strings.Contains(err.Error(), "shutdownGracePeriod") {
		t.Errorf("error %v does not name the file and field", err)
	}
}
