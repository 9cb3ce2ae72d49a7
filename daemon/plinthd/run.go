package plinthd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient"
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/health"
	"github.com/plinth/plinth/daemon/node"
	"github.com/plinth/plinth/daemon/nodeapi"
	"github.com/plinth/plinth/daemon/nodelock"
	"github.com/plinth/plinth/daemon/pressurereport"
	"github.com/plinth/plinth/daemon/shutdown"
	"github.com/plinth/plinth/internal/profiling"
	"github.com/plinth/plinth/internal/version"
	"github.com/plinth/plinth/internal/watchdog"
)

// Run runs plinthd with cfg until ctx is done. notifier speaks the systemd notify
// protocol (a no-op without NOTIFY_SOCKET). configFiles are the files cfg came from,
// for the log. backends are the parts main chose (the Service proxy's rule syncer).
func Run(ctx context.Context, cfg config.Config, configFiles []string, notifier watchdog.Notifier, backends Backends, logger *slog.Logger) (err error) {
	// Before anything is created (the lock file, the state directory): a host that
	// cannot run plinthd as configured is left as it was.
	if err := checkHost(ctx, cfg, backends, logger.With("component", "preflight")); err != nil {
		return err
	}
	lock, err := nodelock.Acquire(cfg.LockFile)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lock.Release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("state directory (stateDir): %w", err)
	}
	logger.Info("plinthd starting", "version", version.String(), "config_files", configFiles, "lock_file", cfg.LockFile)

	interval, err := watchdog.IntervalFromEnv()
	if err != nil {
		return err
	}
	registry := health.NewRegistry()
	checker := health.NewChecker()
	checker.Register("node-lock", lock.Check)
	healthServer := health.NewServer(cfg.HealthzBindAddress, checker, registry, logger.With("component", "healthz"))
	dog := watchdog.New(notifier, interval, checker.Check, clock.RealClock{}, logger.With("component", "watchdog"))

	// The client comes first: pressure eviction and OOM events use it, and the
	// /pressure view must be mounted before the health server starts.
	var client nodeclient.Interface
	nodeName, err := node.NodeName(cfg.HostnameOverride)
	if cfg.Kubeconfig != "" {
		if err != nil {
			return err
		}
		if client, err = newClient(cfg, nodeName, logger); err != nil {
			return err
		}
	}
	// The pod runtime is made here, started once the Node is registered: the pressure
	// manager evicts through it.
	var podsRT *podRuntime
	if client != nil && cfg.PodsEnabled() {
		podsRT = newPodRuntime(cfg, client, nodeName, registry, logger)
	}
	pressureSys, err := newPressure(cfg, nodeName, client, podsRT, registry, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := pressureSys.close(); cerr != nil {
			logger.Warn("releasing pressure feeds", "err", cerr)
		}
	}()
	healthServer.Handle("GET "+pressurereport.Path, pressurereport.Handler(pressureSys.manager))
	checker.Register("pressure", pressureSys.alive)

	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil) // before wg.Wait (defers run last first), or an error return would hang
	wg.Go(func() {
		if err := healthServer.Run(ctx); err != nil {
			cancel(fmt.Errorf("healthz server (healthzBindAddress): %w", err))
		}
	})
	select {
	case <-healthServer.Listening():
		logger.Info("serving /healthz, /metrics and /pressure", "address", healthServer.Addr())
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if cfg.ProfilingAddress != "" {
		ln, err := net.Listen("tcp", cfg.ProfilingAddress)
		if err != nil {
			return fmt.Errorf("listen on %s (profilingAddress): %w", cfg.ProfilingAddress, err)
		}
		wg.Go(func() {
			if err := profiling.Serve(ctx, ln, "profilingAddress", logger.With("component", "profiling")); err != nil {
				cancel(err)
			}
		})
	}
	// Standalone too: conditions are computed and shown in /pressure, not posted.
	wg.Go(func() { pressureSys.run(ctx) })

	if cfg.Kubeconfig == "" {
		logger.Warn("standalone mode: no kubeconfig is configured, so plinthd registers with no control service")
		if err := watchdog.Ready(notifier, "standalone: no control service configured"); err != nil {
			logger.Warn("systemd notify", "err", err)
		}
		wg.Go(func() { _ = dog.Run(ctx) })
		<-ctx.Done()
		return stop(ctx, notifier, logger)
	}

	// Graceful node shutdown (when configured) turns Ready False and stops the pods
	// when logind announces a shutdown.
	var conditions node.ConditionSource = pressureSys.manager
	var podsForShutdown shutdown.Pods
	if podsRT != nil {
		podsForShutdown = shutdownPods{podsRT}
	}
	shutdownMgr, err := newGracefulShutdown(cfg, podsForShutdown, registry, logger)
	if err != nil {
		return err
	}
	if shutdownMgr != nil {
		sc := newShutdownConditions(pressureSys.manager, shutdownMgr)
		conditions = sc
		if podsRT != nil {
			podsRT.shuttingDown = shutdownMgr.ShuttingDown
		}
		wg.Go(func() { sc.forward(ctx) })
		wg.Go(func() { runGracefulShutdown(ctx, shutdownMgr, logger) })
	}
	agent, err := newNodeAgent(cfg, client, nodeName, conditions, registry, logger)
	if err != nil {
		return err
	}
	svcProxy, err := newServiceProxy(cfg, backends, client, nodeName, registry, logger)
	if err != nil {
		return err
	}
	if svcProxy != nil {
		defer svcProxy.close()
		checker.Register("service-proxy", svcProxy.proxy.Check)
		wg.Go(func() {
			if err := svcProxy.proxy.Run(ctx); err != nil {
				cancel(fmt.Errorf("service proxy: %w", err))
			}
		})
	}
	if podsRT != nil {
		checker.Register("pods", podsRT.Check)
	}
	checker.Register("node-lease", agent.LeaseAlive)
	checker.Register("node-status", agent.StatusAlive)
	wg.Go(func() { _ = dog.Run(ctx) })
	// Renew the client certificate written by plinthctl join; client-go picks up the
	// new file by itself. A kubeconfig with an embedded certificate is not renewed.
	renewer, err := controlclient.NewCertRenewer(cfg.Kubeconfig, controlclient.RenewerOptions{
		Registerer: registry, Logger: logger.With("component", "certificates"),
	})
	switch {
	case errors.Is(err, controlclient.ErrNotRenewable):
		logger.Warn("client certificate renewal is off", "reason", err)
	case err != nil:
		return err
	default:
		wg.Go(func() { _ = renewer.Run(ctx) })
	}

	_ = watchdog.Status(notifier, "registering node")
	// The heartbeat starts at once, as kubelet's does; status waits for the Node.
	wg.Go(func() { _ = agent.RunLease(ctx) })
	n, err := agent.Register(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return stop(ctx, notifier, logger)
		}
		return err
	}
	wg.Go(func() { _ = agent.RunStatus(ctx) })
	var podSource nodeapi.PodSource = nodeapi.NoPods{}
	if podsRT != nil {
		podSource = podsRT.status
	}
	if err := startNodeAPI(ctx, &wg, cancel, cfg, nodeName, agent.Addresses, podSource, registry, checker.Check, logger); err != nil {
		return err
	}
	if podsRT != nil {
		// Pods start once the Node is registered (their network waits for its pod
		// CIDRs); their containers keep running when plinthd stops.
		wg.Go(func() { podsRT.run(ctx) })
	}
	name := cfg.HostnameOverride
	if n != nil {
		name = n.Name
	}
	if err := watchdog.Ready(notifier, fmt.Sprintf("node %s registered; heartbeating", name)); err != nil {
		logger.Warn("systemd notify", "err", err)
	}
	<-ctx.Done()
	return stop(ctx, notifier, logger)
}

// stop tells systemd plinthd is stopping and returns why ctx ended, unless it ended
// because plinthd was asked to stop.
func stop(ctx context.Context, notifier watchdog.Notifier, logger *slog.Logger) error {
	_ = watchdog.Stopping(notifier)
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		logger.Info("plinthd stopping")
		return nil
	}
	return cause
}

// newClient builds the client of the control service from the configuration.
func newClient(cfg config.Config, name string, logger *slog.Logger) (nodeclient.Interface, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	node.ConfigureClient(restCfg, time.Duration(cfg.NodeLeaseDurationSeconds)*time.Second, "plinthd/"+version.String())
	restCfg.QPS, restCfg.Burst = float32(cfg.KubeAPIQPS), int(cfg.KubeAPIBurst)
	// Only the API groups plinthd uses: the clientset of every group would cost several
	// MiB of resident memory (see nodeclient).
	client, err := nodeclient.New(restCfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", restCfg.Host, err)
	}
	logger.Info("control service", "server", restCfg.Host, "node", name)
	return client, nil
}

// newNodeAgent builds the node agent from the configuration; conditions supplies the
// pressure conditions.
func newNodeAgent(cfg config.Config, client nodeclient.Interface, name string, conditions node.ConditionSource,
	registry prometheus.Registerer, logger *slog.Logger) (*node.Agent, error) {
	var err error
	nodeCfg := node.DefaultConfig(name)
	nodeCfg.Labels = cfg.NodeLabels
	nodeCfg.Taints = cfg.RegisterWithTaints
	nodeCfg.RegisterNode = cfg.RegisterNode
	nodeCfg.LeaseDuration = time.Duration(cfg.NodeLeaseDurationSeconds) * time.Second
	nodeCfg.StatusUpdateFrequency = cfg.NodeStatusUpdateFrequency.Duration
	nodeCfg.StatusReportFrequency = cfg.NodeStatusReportFrequency.Duration
	nodeCfg.MaxPods = cfg.MaxPods
	nodeCfg.StateDir = cfg.StateDir
	nodeCfg.APIPort = nodeAPIPort(cfg)
	if cfg.NodeIP != "" {
		nodeCfg.NodeIP = net.ParseIP(cfg.NodeIP)
	}
	if nodeCfg.SystemReserved, err = node.ResourceListFromStrings("systemReserved", cfg.SystemReserved); err != nil {
		return nil, err
	}
	if nodeCfg.KubeReserved, err = node.ResourceListFromStrings("kubeReserved", cfg.KubeReserved); err != nil {
		return nil, err
	}
	facts, err := node.GatherHostFacts(nodeCfg, logger)
	if err != nil {
		return nil, err
	}
	return node.NewAgent(client, nodeCfg, facts, conditions, clock.RealClock{}, registry, logger)
}
