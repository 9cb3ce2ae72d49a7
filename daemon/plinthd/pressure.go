package plinthd

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/node"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// pressureStallBound is how long the pressure manager may go without finishing an
// evaluation, beyond three evaluation intervals, before its health check fails: long
// enough for a slow statfs or a loaded machine, short enough that a hung manager is
// restarted by the watchdog long before anyone would miss its conditions.
const pressureStallBound = 30 * time.Second

// pressureSubsystem is the pressure manager and the signals that feed it.
type pressureSubsystem struct {
	signals  *pressuresignals.Signals
	manager  *pressure.Manager
	interval time.Duration
	clock    clock.PassiveClock
	created  time.Time
}

// newPressure opens the signals (best effort: what is missing is reported, not fatal)
// and builds the manager. With a client, eviction lists and evicts the pods the API
// binds to node, and OOM kills are posted as Events on the Node; without one
// (standalone) conditions are only computed and shown.
func newPressure(cfg config.Config, nodeName string, client nodeclient.Interface, podsRT *podRuntime, reg prometheus.Registerer, logger *slog.Logger) (*pressureSubsystem, error) {
	pc, err := cfg.PressureConfig()
	if err != nil {
		return nil, err
	}
	logger = logger.With("component", "pressure")
	allocatable, err := allocatableMemory(cfg)
	if err != nil {
		return nil, err
	}
	opts := pressuresignals.Options{
		NodeName:               nodeName,
		NodefsDir:              cfg.NodefsDir(),
		ImagefsDir:             cfg.ImagefsDir(),
		PodsCgroup:             cfg.PodsCgroup,
		AllocatableMemoryBytes: allocatable,
		Thresholds:             pc.Thresholds,
		EvaluationInterval:     pc.EvaluationInterval,
		Registerer:             reg,
		Logger:                 logger,
	}
	deps := pressure.Deps{Registerer: reg, Logger: logger}
	if client != nil {
		events := pressuresignals.APIEvents{Client: client}
		opts.Events = events
		api := pressuresignals.NewAPIPods(client, nodeName, events, nil, logger)
		deps.Pods, deps.Evictor = api, podEvictor{api: api, rt: podsRT}
		if podsRT != nil {
			deps.Pods = runtimePodLister(cfg, podsRT, logger)
		}
	}
	if podsRT != nil {
		// Node-level garbage collection before any eviction for disk, and as soon as
		// DiskPressure rises.
		deps.Reclaimer, deps.ConditionsChanged = podsRT, podsRT.conditionsChanged
	}
	signals, err := pressuresignals.Open(opts)
	if err != nil {
		return nil, err
	}
	// Loading the BPF programs parsed the kernel's BTF: several MiB that are garbage
	// now. Hand them back to the kernel at once instead of leaving them to the
	// scavenger, so a daemon that is mostly idle stays small from the start.
	debug.FreeOSMemory()
	deps.Source, deps.Wakeups = signals, signals.Wakeups()
	m, err := pressure.NewManager(pc, deps)
	if err != nil {
		_ = signals.Close()
		return nil, err
	}
	clk := clock.RealClock{}
	return &pressureSubsystem{signals: signals, manager: m, interval: pc.EvaluationInterval, clock: clk, created: clk.Now()}, nil
}

// run sets the signals going and evaluates until ctx is done.
func (p *pressureSubsystem) run(ctx context.Context) {
	p.signals.Start(ctx)
	_ = p.manager.Run(ctx)
}

// close releases the PSI triggers and BPF programs; call it after run returned.
func (p *pressureSubsystem) close() error { return p.signals.Close() }

// alive fails when no evaluation finished for three intervals plus pressureStallBound.
func (p *pressureSubsystem) alive() error {
	bound := 3*p.interval + pressureStallBound
	s := p.manager.Snapshot()
	last := p.created
	if s.Evaluated {
		last = s.At
	}
	if age := p.clock.Since(last); age > bound {
		if !s.Evaluated {
			return fmt.Errorf("no pressure evaluation in the %s since start", age.Round(time.Second))
		}
		return fmt.Errorf("last pressure evaluation %s ago (want one every %s)", age.Round(time.Second), p.interval)
	}
	return nil
}

// runtimePodLister lists the pods the runtime runs with their pod cgroups' usage; on
// a host whose cgroups cannot be read they rank without usage (said once, here).
func runtimePodLister(cfg config.Config, rt *podRuntime, logger *slog.Logger) pressuresignals.RuntimePods {
	l := pressuresignals.RuntimePods{Running: rt.runningPods, Parent: cfg.Pods.CgroupParent, Logger: logger}
	if host, err := cgroup.DetectHost(); err == nil {
		l.Cgroups = &host
	} else {
		logger.Warn("pod usage for eviction ranking unavailable; pods rank by requests and priority", "err", err)
	}
	return l
}

// allocatableMemory is the node's memory minus systemReserved and kubeReserved
// memory, as the Node's allocatable reports it: the capacity of
// allocatableMemory.available when the pods cgroup has no limit of its own.
func allocatableMemory(cfg config.Config) (uint64, error) {
	if cfg.PodsCgroup == "" {
		return 0, nil
	}
	mi, err := sysinfo.Host{}.Meminfo()
	if err != nil {
		return 0, nil // the signals fall back on MemTotal, or report meminfo missing
	}
	total := int64(mi.MemTotal)
	for field, m := range map[string]map[string]string{"systemReserved": cfg.SystemReserved, "kubeReserved": cfg.KubeReserved} {
		list, err := node.ResourceListFromStrings(field, m)
		if err != nil {
			return 0, err
		}
		if q, ok := list[corev1.ResourceMemory]; ok {
			total -= q.Value()
		}
	}
	if total <= 0 {
		return 1, nil // everything reserved: any pod use is pressure
	}
	return uint64(total), nil
}
