package config

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/daemon/proxy"
)

// ProxyConfig configures the Service proxy (kube-proxy's nftables mode), the YAML
// section proxy:. Its names follow KubeProxyConfiguration.
type ProxyConfig struct {
	// Enabled turns the proxy on or off; null (the default) means on exactly when a
	// kubeconfig is set.
	Enabled *bool `json:"enabled"`
	// NodePortAddresses are where NodePorts listen: ["primary"] or empty for the
	// node's InternalIP addresses, or CIDRs selecting local addresses. Never loopback.
	NodePortAddresses []string `json:"nodePortAddresses"`
	// MinSyncPeriod is the shortest time between two rule syncs: changes within it
	// coalesce into one sync.
	MinSyncPeriod metav1.Duration `json:"minSyncPeriod"`
	// SyncPeriod is how often the rules are fully resynced; /healthz fails when a
	// change waited twice as long.
	SyncPeriod metav1.Duration `json:"syncPeriod"`
	// HealthzBindAddress is host:port of the proxy's /healthz and /livez; empty
	// serves neither.
	HealthzBindAddress string `json:"healthzBindAddress"`
	// ClusterCIDRs are the pod ranges, letting masquerade tell pod traffic from
	// off-node traffic; ServiceCIDRs are the Service ranges, letting traffic to
	// unallocated cluster IPs be rejected.
	ClusterCIDRs []string `json:"clusterCIDRs"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
}

func defaultProxyConfig() ProxyConfig {
	return ProxyConfig{
		MinSyncPeriod:      metav1.Duration{Duration: proxy.DefaultMinSyncPeriod},
		SyncPeriod:         metav1.Duration{Duration: proxy.DefaultSyncPeriod},
		HealthzBindAddress: proxy.DefaultHealthzBindAddress,
	}
}

// ProxyEnabled reports whether plinthd runs the Service proxy.
func (c Config) ProxyEnabled() bool {
	if c.Proxy.Enabled != nil {
		return *c.Proxy.Enabled
	}
	return c.Kubeconfig != ""
}

// minProxySyncPeriod keeps a mistyped period ("1ms") from turning the proxy into a
// busy loop of syncs.
const minProxySyncPeriod = 10 * time.Millisecond

func (p ProxyConfig) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := proxy.ParseNodePortAddresses(p.NodePortAddresses); err != nil {
		errs = append(errs, field.Invalid(path.Child("nodePortAddresses"), strings.Join(p.NodePortAddresses, ","), err.Error()))
	}
	if d := p.MinSyncPeriod.Duration; d < minProxySyncPeriod {
		errs = append(errs, field.Invalid(path.Child("minSyncPeriod"), d.String(),
			fmt.Sprintf(`must be at least %s, such as "1s"`, minProxySyncPeriod)))
	}
	if d := p.SyncPeriod.Duration; d < minProxySyncPeriod {
		errs = append(errs, field.Invalid(path.Child("syncPeriod"), d.String(),
			fmt.Sprintf(`must be at least %s, such as "30s"`, minProxySyncPeriod)))
	}
	if p.HealthzBindAddress != "" {
		errs = append(errs, validateHostPort(path.Child("healthzBindAddress"), p.HealthzBindAddress)...)
	}
	for _, list := range []struct {
		name   string
		values []string
	}{{"clusterCIDRs", p.ClusterCIDRs}, {"serviceCIDRs", p.ServiceCIDRs}} {
		if _, err := proxy.ParseCIDRs(list.values); err != nil {
			errs = append(errs, field.Invalid(path.Child(list.name), strings.Join(list.values, ","), err.Error()))
		}
	}
	return errs
}

// validateProxyAcrossFields compares proxy fields with each other and with
// kubeconfig; it runs on the merged configuration only.
func (c Config) validateProxyAcrossFields() field.ErrorList {
	path := field.NewPath("proxy")
	var errs field.ErrorList
	if c.Proxy.SyncPeriod.Duration < c.Proxy.MinSyncPeriod.Duration {
		errs = append(errs, field.Invalid(path.Child("syncPeriod"), c.Proxy.SyncPeriod.Duration.String(),
			fmt.Sprintf("must not be shorter than proxy.minSyncPeriod (%s)", c.Proxy.MinSyncPeriod.Duration)))
	}
	if c.Proxy.Enabled != nil && *c.Proxy.Enabled && c.Kubeconfig == "" {
		errs = append(errs, field.Invalid(path.Child("enabled"), true,
			"the Service proxy watches the control service: set kubeconfig, or leave proxy.enabled unset"))
	}
	return errs
}
