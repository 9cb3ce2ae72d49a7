package plinthd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/podnet"
	"github.com/plinth/plinth/daemon/preflight"
	"github.com/plinth/plinth/daemon/proxy"
	"github.com/plinth/plinth/kernel/conntrack"
)

// ProxyRules is the kernel half of the Service proxy: it turns desired snapshots into
// nftables rules and removes them all on Cleanup (daemon/proxy/nftrules).
type ProxyRules interface {
	proxy.Syncer
	proxy.Cleaner
}

// Backends are the parts of plinthd that main chooses rather than the configuration.
type Backends struct {
	// NewProxyRules builds the Service proxy's rule syncer. Nil means this build has
	// none: the proxy does not start (said in the log) and --cleanup has nothing to do.
	NewProxyRules func(logger *slog.Logger) (ProxyRules, error)
	// Preflight checks the host before plinthd changes anything; nil checks the
	// running system (daemon/preflight). plinthd refuses to start on a FAIL.
	Preflight func(ctx context.Context, needs preflight.Needs) preflight.Report
}

// serviceProxy is the running Service proxy and what it holds open.
type serviceProxy struct {
	proxy     *proxy.Proxy
	conntrack *conntrack.Deleter
}

// newServiceProxy builds the Service proxy from the configuration, or returns nil when
// it is disabled or this build has no rule syncer.
func newServiceProxy(cfg config.Config, backends Backends, client nodeclient.Interface, nodeName string,
	registry prometheus.Registerer, logger *slog.Logger) (*serviceProxy, error) {
	if !cfg.ProxyEnabled() || client == nil {
		return nil, nil
	}
	logger = logger.With("component", "proxy")
	if backends.NewProxyRules == nil {
		logger.Warn("the Service proxy is enabled but this plinthd has no nftables rule syncer; Services are not programmed")
		return nil, nil
	}
	nodePorts, err := proxy.ParseNodePortAddresses(cfg.Proxy.NodePortAddresses)
	if err != nil {
		return nil, fmt.Errorf("proxy.nodePortAddresses%w", err)
	}
	clusterCIDRs, err := proxy.ParseCIDRs(cfg.Proxy.ClusterCIDRs)
	if err != nil {
		return nil, fmt.Errorf("proxy.clusterCIDRs%w", err)
	}
	serviceCIDRs, err := proxy.ParseCIDRs(cfg.Proxy.ServiceCIDRs)
	if err != nil {
		return nil, fmt.Errorf("proxy.serviceCIDRs%w", err)
	}
	rules, err := backends.NewProxyRules(logger)
	if err != nil {
		return nil, fmt.Errorf("service proxy rules: %w", err)
	}
	ct, err := conntrack.Open()
	if err != nil {
		return nil, err
	}
	p, err := proxy.New(proxy.Config{
		NodeName:           nodeName,
		Sources:            proxySources(client, nodeName),
		Syncer:             rules,
		Conntrack:          ct,
		NodePortAddresses:  nodePorts,
		ClusterCIDRs:       clusterCIDRs,
		ServiceCIDRs:       serviceCIDRs,
		MinSyncPeriod:      cfg.Proxy.MinSyncPeriod.Duration,
		SyncPeriod:         cfg.Proxy.SyncPeriod.Duration,
		HealthzBindAddress: cfg.Proxy.HealthzBindAddress,
		Clock:              clock.RealClock{},
		Registerer:         registry,
		Logger:             logger,
	})
	if err != nil {
		ct.Close()
		return nil, err
	}
	return &serviceProxy{proxy: p, conntrack: ct}, nil
}

func (s *serviceProxy) close() { s.conntrack.Close() }

// Cleanup removes the kernel state plinthd owns by name and would otherwise leave
// behind: the pod network's bridge and masquerade table, the pod cgroups under
// cfg's pods.cgroupParent (those that hold no process), then the Service proxy's
// nftables tables. Each part is tried even when an earlier one failed.
func Cleanup(ctx context.Context, cfg config.Config, backends Backends, logger *slog.Logger) error {
	var errs []error
	if err := podnet.Cleanup(ctx, podnet.CleanupConfig{}); err != nil {
		errs = append(errs, fmt.Errorf("--cleanup: removing the pod network: %w", err))
	} else {
		logger.Info("removed the pod network's bridge and masquerade table")
	}
	if err := cleanupPodCgroups(cfg.Pods.CgroupParent, logger); err != nil {
		errs = append(errs, fmt.Errorf("--cleanup: removing the pod cgroups (pods.cgroupParent): %w", err))
	}
	if backends.NewProxyRules == nil {
		errs = append(errs, errors.New("--cleanup: this plinthd has no Service proxy rule syncer, so there is nothing it could have programmed"))
		return errors.Join(errs...)
	}
	rules, err := backends.NewProxyRules(logger.With("component", "proxy"))
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("--cleanup: %w", err))...)
	}
	if err := rules.Cleanup(ctx); err != nil {
		errs = append(errs, fmt.Errorf("--cleanup: removing the Service proxy's nftables tables: %w", err))
	} else {
		logger.Info("removed the Service proxy's kernel state")
	}
	return errors.Join(errs...)
}
