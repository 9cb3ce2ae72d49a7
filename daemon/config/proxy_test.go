package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ptrTo[T any](v T) *T { return &v }

func TestProxyEnabledDefaultsToKubeconfig(t *testing.T) {
	c := Defaults()
	if c.ProxyEnabled() {
		t.Error("proxy enabled in standalone mode by default")
	}
	c.Kubeconfig = "/etc/plinth/kubeconfig"
	if !c.ProxyEnabled() {
		t.Error("proxy disabled by default with a kubeconfig")
	}
	c.Proxy.Enabled = ptrTo(false)
	if c.ProxyEnabled() {
		t.Error("proxy.enabled: false ignored")
	}
}

func TestProxyDefaults(t *testing.T) {
	p := Defaults().Proxy
	if p.MinSyncPeriod.Duration != time.Second || p.SyncPeriod.Duration != 30*time.Second || p.HealthzBindAddress != "0.0.0.0:10256" {
		t.Errorf("proxy defaults = %+v", p)
	}
}

func TestProxyValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		field  string
		value  string
	}{
		{"primary mixed with a CIDR", func(c *Config) { c.Proxy.NodePortAddresses = []string{"primary", "10.0.0.0/8"} },
			"proxy.nodePortAddresses", `"primary,10.0.0.0/8"`},
		{"loopback node ports", func(c *Config) { c.Proxy.NodePortAddresses = []string{"127.0.0.0/8"} },
			"proxy.nodePortAddresses", "loopback"},
		{"bad cluster CIDR", func(c *Config) { c.Proxy.ClusterCIDRs = []string{"10.244.0.0"} }, "proxy.clusterCIDRs", `"10.244.0.0"`},
		{"bad service CIDR", func(c *Config) { c.Proxy.ServiceCIDRs = []string{"10.96.0.0/12", "x"} }, "proxy.serviceCIDRs", `"x"`},
		{"tiny min sync period", func(c *Config) { c.Proxy.MinSyncPeriod.Duration = time.Millisecond }, "proxy.minSyncPeriod", `"1ms"`},
		{"zero sync period", func(c *Config) { c.Proxy.SyncPeriod.Duration = 0 }, "proxy.syncPeriod", `"0s"`},
		{"sync period below min", func(c *Config) { c.Proxy.SyncPeriod.Duration = 500 * time.Millisecond }, "proxy.syncPeriod", `"500ms"`},
		{"bad healthz address", func(c *Config) { c.Proxy.HealthzBindAddress = "0.0.0.0" }, "proxy.healthzBindAddress", `"0.0.0.0"`},
		{"enabled without kubeconfig", func(c *Config) { c.Proxy.Enabled = ptrTo(true) }, "proxy.enabled", "kubeconfig"},
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
	ok.Kubeconfig = "/etc/plinth/kubeconfig"
	ok.Proxy.Enabled = ptrTo(true)
	ok.Proxy.HealthzBindAddress = ""
	ok.Proxy.NodePortAddresses = []string{"primary"}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid proxy config refused: %v", err)
	}
}

func TestProxyDropInMerge(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":            "kubeconfig: /k\nproxy: {nodePortAddresses: [10.0.0.0/8], syncPeriod: 1m}\n",
		"plinthd.d/10-proxy.yaml": "proxy: {minSyncPeriod: 2s, nodePortAddresses: [192.0.2.0/24]}\n",
	})
	c, _ := mustLoadDir(t, dir)
	if c.Proxy.SyncPeriod.Duration != time.Minute || c.Proxy.MinSyncPeriod.Duration != 2*time.Second {
		t.Errorf("periods = %v / %v, want the file's 1m and the drop-in's 2s", c.Proxy.SyncPeriod, c.Proxy.MinSyncPeriod)
	}
	if len(c.Proxy.NodePortAddresses) != 1 || c.Proxy.NodePortAddresses[0] != "192.0.2.0/24" {
		t.Errorf("nodePortAddresses = %v, want the drop-in's list whole", c.Proxy.NodePortAddresses)
	}
	if c.Proxy.HealthzBindAddress != "0.0.0.0:10256" {
		t.Errorf("untouched field lost its default: %q", c.Proxy.HealthzBindAddress)
	}
}

func TestNodePortAddressesFlagReplacesFileList(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": "kubeconfig: /k\nproxy: {nodePortAddresses: [10.0.0.0/8], syncPeriod: 1m}\n"})
	c, _, err := parseFlags(t, "--config", filepath.Join(dir, "plinthd.yaml"), "--config-dir", "",
		"--nodeport-addresses", "192.0.2.0/24, 2001:db8::/64")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Proxy.NodePortAddresses, []string{"192.0.2.0/24", "2001:db8::/64"}) || c.Proxy.SyncPeriod.Duration != time.Minute {
		t.Fatalf("proxy = %+v", c.Proxy)
	}
	c, _, err = parseFlags(t, "--config", filepath.Join(dir, "plinthd.yaml"), "--config-dir", "", "--nodeport-addresses", "primary")
	if err != nil || !slices.Equal(c.Proxy.NodePortAddresses, []string{"primary"}) {
		t.Fatalf("--nodeport-addresses primary: %v %v", c.Proxy.NodePortAddresses, err)
	}
}
