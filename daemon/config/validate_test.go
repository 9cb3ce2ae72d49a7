package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Errorf("Defaults().Validate() = %v", err)
	}
}

func TestDefaultsAreFresh(t *testing.T) {
	a := Defaults()
	a.NodeLabels = map[string]string{"x": "y"}
	a.RegisterWithTaints = append(a.RegisterWithTaints, corev1.Taint{Key: "k"})
	b := Defaults()
	if b.NodeLabels != nil || b.RegisterWithTaints != nil {
		t.Errorf("changing one Defaults() result changed another: %+v", b)
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := map[string]func(*Config){
		"allowed label domains": func(c *Config) {
			c.NodeLabels = map[string]string{
				"node-role.kubernetes.io/control-plane": "",
				"node.kubernetes.io/instance-type":      "m5.large",
				"topology.kubernetes.io/zone":           "a",
				"example.com/team":                      "infra",
				"plain":                                 "v",
			}
		},
		"all reserved resources": func(c *Config) {
			c.SystemReserved = map[string]string{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1G", "pid": "100"}
		},
		"IPv6 node IP":          func(c *Config) { c.NodeIP = "fe80::1" },
		"healthz any interface": func(c *Config) { c.HealthzBindAddress = ":10248" },
		"healthz by name":       func(c *Config) { c.HealthzBindAddress = "localhost:10248" },
		"standalone":            func(c *Config) { c.Kubeconfig = "" },
		"same key two effects": func(c *Config) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Effect: corev1.TaintEffectNoExecute}}
		},
	}
	for name, mutate := range cases {
		c := Defaults()
		mutate(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v", name, err)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		field  string // the field the error must name
		value  string // text of the value the error must show ("" when it has none)
	}{
		{"hostname with underscore", func(c *Config) { c.HostnameOverride = "a_b" }, "hostnameOverride", `"a_b"`},
		{"uppercase hostname", func(c *Config) { c.HostnameOverride = "Node1" }, "hostnameOverride", `"Node1"`},
		{"node IP with zone", func(c *Config) { c.NodeIP = "fe80::1%eth0" }, "nodeIP", `"fe80::1%eth0"`},
		{"zero API QPS", func(c *Config) { c.KubeAPIQPS = 0 }, "kubeAPIQPS", "0"},
		{"negative API burst", func(c *Config) { c.KubeAPIBurst = -1 }, "kubeAPIBurst", "-1"},
		{"profiling address without a port", func(c *Config) { c.ProfilingAddress = "localhost" }, "profilingAddress", `"localhost"`},
		{"label value too long", func(c *Config) { c.NodeLabels = map[string]string{"a": strings.Repeat("x", 64)} }, "nodeLabels[a]", "xxxx"},
		{"kubernetes.io/os label", func(c *Config) { c.NodeLabels = map[string]string{"kubernetes.io/os": "linux"} }, "nodeLabels[kubernetes.io/os]", ""},
		{"beta.kubernetes.io label", func(c *Config) { c.NodeLabels = map[string]string{"beta.kubernetes.io/arch": "x"} }, "nodeLabels[beta.kubernetes.io/arch]", ""},
		{"k8s.io label", func(c *Config) { c.NodeLabels = map[string]string{"k8s.io/x": "y"} }, "nodeLabels[k8s.io/x]", ""},
		{"sub-subdomain of allowed", func(c *Config) { c.NodeLabels = map[string]string{"a.node.kubernetes.io/x": "y"} }, "nodeLabels[a.node.kubernetes.io/x]", ""},
		{"taint without key", func(c *Config) {
			c.RegisterWithTaints = []corev1.Taint{{Effect: corev1.TaintEffectNoSchedule}}
		}, "registerWithTaints[0].key", ""},
		{"taint bad value", func(c *Config) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "k", Value: "a b", Effect: corev1.TaintEffectNoSchedule}}
		}, "registerWithTaints[0].value", `"a b"`},
		{"taint empty effect", func(c *Config) { c.RegisterWithTaints = []corev1.Taint{{Key: "k"}} }, "registerWithTaints[0].effect", `""`},
		{"duplicate taint", func(c *Config) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
		}, "registerWithTaints[1]", `"k:NoSchedule"`},
		{"taint timeAdded", func(c *Config) {
			c.RegisterWithTaints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{}}}
		}, "registerWithTaints[0].timeAdded", ""},
		{"negative lease", func(c *Config) { c.NodeLeaseDurationSeconds = -1 }, "nodeLeaseDurationSeconds", "-1"},
		{"zero update frequency", func(c *Config) { c.NodeStatusUpdateFrequency.Duration = 0 }, "nodeStatusUpdateFrequency", `"0s"`},
		{"negative report frequency", func(c *Config) { c.NodeStatusReportFrequency.Duration = -time.Second }, "nodeStatusReportFrequency", `"-1s"`},
		{"healthz port too big", func(c *Config) { c.HealthzBindAddress = "127.0.0.1:65536" }, "healthzBindAddress", `"127.0.0.1:65536"`},
		{"healthz named port", func(c *Config) { c.HealthzBindAddress = "127.0.0.1:http" }, "healthzBindAddress", `"127.0.0.1:http"`},
		{"healthz bad host", func(c *Config) { c.HealthzBindAddress = "bad_host:1" }, "healthzBindAddress", `"bad_host:1"`},
		{"empty lock file", func(c *Config) { c.LockFile = "" }, "lockFile", `""`},
		{"relative state dir", func(c *Config) { c.StateDir = "var/lib/plinth" }, "stateDir", `"var/lib/plinth"`},
		{"zero max pods", func(c *Config) { c.MaxPods = 0 }, "maxPods", "0"},
		{"negative reserved", func(c *Config) { c.KubeReserved = map[string]string{"memory": "-1Gi"} }, "kubeReserved[memory]", `"-1Gi"`},
		{"fractional pid", func(c *Config) { c.SystemReserved = map[string]string{"pid": "100m"} }, "systemReserved[pid]", `"100m"`},
		{"unknown resource", func(c *Config) { c.SystemReserved = map[string]string{"hugepages-2Mi": "1"} }, "systemReserved[hugepages-2Mi]", `"hugepages-2Mi"`},
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
			if tc.value != "" && !strings.Contains(err.Error(), tc.value) {
				t.Errorf("error %q does not show the value %s", err, tc.value)
			}
		})
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	c := Defaults()
	c.MaxPods = 0
	c.NodeIP = "x"
	c.LockFile = "rel"
	err := c.Validate()
	for _, f := range []string{"maxPods", "nodeIP", "lockFile"} {
		if err == nil || !strings.Contains(err.Error(), f+":") {
			t.Errorf("error %v does not mention %s", err, f)
		}
	}
}
