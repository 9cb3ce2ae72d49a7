package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/pressure"
)

func TestEvictionDefaults(t *testing.T) {
	c := Defaults()
	pc, err := c.PressureConfig()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range pc.Thresholds {
		got = append(got, th.String())
	}
	want := "memory.available<100Mi pid.available<5% nodefs.available<10% nodefs.inodesFree<5% imagefs.available<15% imagefs.inodesFree<5%"
	if strings.Join(got, " ") != want {
		t.Errorf("default thresholds %v, want %s", got, want)
	}
	if pc.PressureTransitionPeriod != 5*time.Minute || pc.EvaluationInterval != time.Second {
		t.Errorf("default periods: transition %s, interval %s; want 5m and 1s", pc.PressureTransitionPeriod, pc.EvaluationInterval)
	}
	if c.NodefsDir() != "/var/lib/plinth" || c.ImagefsDir() != "/var/lib/plinth/images" {
		t.Errorf("nodefs %s, imagefs %s; want the state directory and its images directory", c.NodefsDir(), c.ImagefsDir())
	}
	c.StateDir = "/srv/plinth"
	if c.NodefsDir() != "/srv/plinth" || c.ImagefsDir() != "/srv/plinth/images" {
		t.Errorf("after moving stateDir: nodefs %s, imagefs %s; want them to follow", c.NodefsDir(), c.ImagefsDir())
	}
	c.NodefsPath, c.ImagefsPath = "/data", "/images"
	if c.NodefsDir() != "/data" || c.ImagefsDir() != "/images" {
		t.Errorf("explicit paths: nodefs %s, imagefs %s", c.NodefsDir(), c.ImagefsDir())
	}
}

func TestEvictionDefaultsAreFresh(t *testing.T) {
	a := Defaults()
	a.EvictionHard["memory.available"] = "1Gi"
	if b := Defaults(); b.EvictionHard["memory.available"] != "100Mi" {
		t.Errorf("changing one Defaults() result changed another: %v", b.EvictionHard)
	}
}

func TestValidateEvictionRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		field  string
		value  string
	}{
		{"unknown signal", func(c *Config) { c.EvictionHard["memory.free"] = "1Gi" }, "evictionHard[memory.free]", `"memory.free"`},
		{"bad quantity", func(c *Config) { c.EvictionHard["memory.available"] = "100 MiB" }, "evictionHard[memory.available]", `"100 MiB"`},
		{"percentage above 100", func(c *Config) { c.EvictionHard["nodefs.available"] = "110%" }, "evictionHard[nodefs.available]", `"110%"`},
		{"soft bad value", func(c *Config) {
			c.EvictionSoft = map[string]string{"pid.available": "many"}
			c.EvictionSoftGracePeriod = map[string]metav1.Duration{"pid.available": {Duration: time.Minute}}
		}, "evictionSoft[pid.available]", `"many"`},
		{"negative grace period", func(c *Config) {
			c.EvictionSoft = map[string]string{"pid.available": "1000"}
			c.EvictionSoftGracePeriod = map[string]metav1.Duration{"pid.available": {Duration: -time.Second}}
		}, "evictionSoftGracePeriod[pid.available]", `"-1s"`},
		{"soft without grace period", func(c *Config) { c.EvictionSoft = map[string]string{"memory.available": "1Gi"} },
			"evictionSoft[memory.available]", "evictionSoftGracePeriod[memory.available]"},
		{"grace period without soft", func(c *Config) {
			c.EvictionSoftGracePeriod = map[string]metav1.Duration{"memory.available": {Duration: time.Minute}}
		}, "evictionSoftGracePeriod[memory.available]", `"1m0s"`},
		{"minimum reclaim negative", func(c *Config) { c.EvictionMinimumReclaim = map[string]string{"memory.available": "-1Mi"} },
			"evictionMinimumReclaim[memory.available]", `"-1Mi"`},
		{"negative max pod grace period", func(c *Config) { c.EvictionMaxPodGracePeriod = -5 },
			"evictionMaxPodGracePeriod", "-5"},
		{"negative transition period", func(c *Config) { c.EvictionPressureTransitionPeriod.Duration = -time.Minute },
			"evictionPressureTransitionPeriod", `"-1m0s"`},
		{"evaluation interval too short", func(c *Config) { c.EvictionEvaluationInterval.Duration = time.Millisecond },
			"evictionEvaluationInterval", `"1ms"`},
		{"relative nodefs path", func(c *Config) { c.NodefsPath = "pods" }, "nodefsPath", `"pods"`},
		{"relative imagefs path", func(c *Config) { c.ImagefsPath = "./images" }, "imagefsPath", `"./images"`},
		{"relative pods cgroup", func(c *Config) { c.PodsCgroup = "plinth-pods" }, "podsCgroup", `"plinth-pods"`},
		{"unclean pods cgroup", func(c *Config) { c.PodsCgroup = "/plinth-pods/../x" }, "podsCgroup", `"/plinth-pods/../x"`},
		{"root as pods cgroup", func(c *Config) { c.PodsCgroup = "/" }, "podsCgroup", `"/"`},
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
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("error %q does not start with field %q", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q does not show %s", err, tc.value)
			}
		})
	}
}

func TestValidateEvictionAccepts(t *testing.T) {
	c := Defaults()
	c.EvictionHard["imagefs.available"] = "0%"
	c.EvictionHard["pid.available"] = "100%"
	c.EvictionSoft = map[string]string{"allocatableMemory.available": "500Mi"}
	c.EvictionSoftGracePeriod = map[string]metav1.Duration{"allocatableMemory.available": {Duration: 30 * time.Second}}
	c.EvictionMinimumReclaim = map[string]string{"nodefs.available": "0", "memory.available": "5%"}
	c.EvictionPressureTransitionPeriod.Duration = 0
	c.EvictionEvaluationInterval.Duration = 10 * time.Millisecond
	c.EvictionMaxPodGracePeriod = 20
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	pc, err := c.PressureConfig()
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxPodGracePeriod != 20*time.Second {
		t.Errorf("MaxPodGracePeriod = %s, want 20s from evictionMaxPodGracePeriod: 20", pc.MaxPodGracePeriod)
	}
	for _, th := range pc.Thresholds {
		if th.Signal == pressure.SignalImagefsAvailable || th.Signal == pressure.SignalPIDAvailable {
			t.Errorf("threshold %s should be off", th)
		}
	}
}

// TestLoadSoftThresholdAcrossFiles: a soft threshold may get its grace period from
// another file; the pair is checked on the merged result, and a missing half is
// reported against the merged configuration.
func TestLoadSoftThresholdAcrossFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "evictionSoft: {memory.available: 1Gi}\n",
		"plinthd.d/10.yaml": "evictionSoftGracePeriod: {memory.available: 2m}\n",
	})
	c, _ := mustLoadDir(t, dir)
	pc, err := c.PressureConfig()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, th := range pc.Thresholds {
		if th.Soft() && th.Signal == pressure.SignalMemoryAvailable && th.GracePeriod == 2*time.Minute {
			found = true
		}
	}
	if !found {
		t.Errorf("thresholds %v lack memory.available<1Gi with a 2m grace period", pc.Thresholds)
	}

	dir = writeFiles(t, map[string]string{
		"plinthd.yaml":      "evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 2m}\n",
		"plinthd.d/10.yaml": "evictionSoftGracePeriod: {memory.available: null}\n",
	})
	_, _, err = loadDir(t, dir)
	if err == nil {
		t.Fatal("Load accepted a soft threshold whose grace period a drop-in removed")
	}
	for _, w := range []string{"configuration merged from " + filepath.Join(dir, "plinthd.yaml"),
		"evictionSoft[memory.available]: Required value", "evictionSoftGracePeriod[memory.available]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestLoadEvictionErrorsNameTheFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.d/10.yaml": "evictionHard: {nodefs.available: 10 percent}\n",
		"plinthd.d/20.yaml": "evictionEvaluationInterval: 5\n",
	})
	_, _, err := loadDir(t, dir)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, w := range []string{
		filepath.Join(dir, "plinthd.d/10.yaml") + `: evictionHard[nodefs.available]: Invalid value: "10 percent"`,
		filepath.Join(dir, "plinthd.d/20.yaml") + ": evictionEvaluationInterval: Invalid value",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestLoadEvictionHardMerges: a file changes only the thresholds it names; null brings
// a default back.
func TestLoadEvictionHardMerges(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "evictionHard: {memory.available: 500Mi, nodefs.available: 20%}\n",
		"plinthd.d/10.yaml": "evictionHard: {nodefs.available: null, pid.available: 0%}\n",
	})
	c, _ := mustLoadDir(t, dir)
	want := map[string]string{"memory.available": "500Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
		"imagefs.available": "15%", "imagefs.inodesFree": "5%", "pid.available": "0%"}
	if len(c.EvictionHard) != len(want) {
		t.Errorf("evictionHard = %v, want %v", c.EvictionHard, want)
	}
	for k, v := range want {
		if c.EvictionHard[k] != v {
			t.Errorf("evictionHard[%s] = %q, want %q", k, c.EvictionHard[k], v)
		}
	}
}
