package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/images"
)

// TestGCDefaultsMatchThePolicies: the configuration's defaults are the ones the GC
// packages use when nothing is configured, which are kubelet's.
func TestGCDefaultsMatchThePolicies(t *testing.T) {
	c := Defaults()
	if got, want := c.ContainerGCPolicy(), containergc.DefaultPolicy(); got != want {
		t.Errorf("ContainerGCPolicy() = %+v, want containergc.DefaultPolicy() %+v", got, want)
	}
	if want := (containergc.Policy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}); c.ContainerGCPolicy() != want {
		t.Errorf("container GC defaults %+v are not kubelet's %+v", c.ContainerGCPolicy(), want)
	}
	img := images.DefaultGCPolicy()
	if int(c.ImageGCHighThresholdPercent) != img.HighThresholdPercent || int(c.ImageGCLowThresholdPercent) != img.LowThresholdPercent ||
		c.ImageMinimumGCAge.Duration != img.MinimumAge || c.ImageMaximumGCAge.Duration != img.MaximumAge {
		t.Errorf("image GC defaults %d/%d/%s/%s differ from images.DefaultGCPolicy() %+v", c.ImageGCHighThresholdPercent,
			c.ImageGCLowThresholdPercent, c.ImageMinimumGCAge.Duration, c.ImageMaximumGCAge.Duration, img)
	}
	if c.MaxPods != 110 {
		t.Errorf("maxPods default %d, want 110", c.MaxPods)
	}
}

func TestValidateGCRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		field  string
		value  string
	}{
		{"negative container TTL", func(c *Config) { c.MinimumContainerTTLDuration.Duration = -time.Second }, "minimumContainerTTLDuration", `"-1s"`},
		{"per-container below -1", func(c *Config) { c.MaximumDeadContainersPerContainer = -2 }, "maximumDeadContainersPerContainer", "-2"},
		{"total below -1", func(c *Config) { c.MaximumDeadContainers = -5 }, "maximumDeadContainers", "-5"},
		{"high threshold above 100", func(c *Config) { c.ImageGCHighThresholdPercent = 101 }, "imageGCHighThresholdPercent", "101"},
		{"low threshold negative", func(c *Config) { c.ImageGCLowThresholdPercent = -1 }, "imageGCLowThresholdPercent", "-1"},
		{"low threshold not below high", func(c *Config) { c.ImageGCLowThresholdPercent = 85 }, "imageGCLowThresholdPercent", "imageGCHighThresholdPercent (85)"},
		{"negative minimum image age", func(c *Config) { c.ImageMinimumGCAge.Duration = -time.Minute }, "imageMinimumGCAge", `"-1m0s"`},
		{"negative maximum image age", func(c *Config) { c.ImageMaximumGCAge.Duration = -time.Minute }, "imageMaximumGCAge", `"-1m0s"`},
		{"maximum image age not above minimum", func(c *Config) { c.ImageMaximumGCAge.Duration = 2 * time.Minute }, "imageMaximumGCAge", "imageMinimumGCAge (2m0s)"},
	}
	for _, tc := range cases {
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
				t.Errorf("error %q does not name field %q and %s", err, tc.field, tc.value)
			}
		})
	}
}

func TestValidateGCAccepts(t *testing.T) {
	c := Defaults()
	c.MaximumDeadContainersPerContainer, c.MaximumDeadContainers = -1, 0
	c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent = 100, 0
	c.ImageMinimumGCAge.Duration, c.ImageMaximumGCAge.Duration = 0, time.Second
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if p := c.ContainerGCPolicy(); p.MaxPerPodContainer != -1 || p.MaxContainers != 0 {
		t.Errorf("ContainerGCPolicy() = %+v", p)
	}
}

// TestLoadGCAcrossFiles: the threshold pair is compared on the merged result, so a
// drop-in may lower both; a drop-in lowering only the high one below the main file's
// low one is refused, naming both fields.
func TestLoadGCAcrossFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "imageGCLowThresholdPercent: 50\nmaximumDeadContainers: 20\n",
		"plinthd.d/10.yaml": "imageGCHighThresholdPercent: 60\nmaximumDeadContainers: null\n",
	})
	c, _ := mustLoadDir(t, dir)
	if c.ImageGCHighThresholdPercent != 60 || c.ImageGCLowThresholdPercent != 50 || c.MaximumDeadContainers != -1 {
		t.Errorf("merged: high %d low %d maximumDeadContainers %d; want 60, 50 and the default -1",
			c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent, c.MaximumDeadContainers)
	}

	dir = writeFiles(t, map[string]string{
		"plinthd.yaml":      "imageGCLowThresholdPercent: 70\n",
		"plinthd.d/10.yaml": "imageGCHighThresholdPercent: 60\n",
	})
	_, _, err := loadDir(t, dir)
	if err == nil {
		t.Fatal("Load accepted a low threshold above the high one")
	}
	for _, w := range []string{"imageGCLowThresholdPercent: Invalid value: 70", "imageGCHighThresholdPercent (60)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}

	dir = writeFiles(t, map[string]string{"plinthd.d/10.yaml": "imageGCHighThresholdPercent: 85%\n"})
	_, _, err = loadDir(t, dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "plinthd.d/10.yaml")+": imageGCHighThresholdPercent") {
		t.Errorf("a percent sign: err = %v, want it to name the file and the field", err)
	}
}
