package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/conntrack"
)

// Defaults are kube-proxy's.
const (
	DefaultMinSyncPeriod      = time.Second
	DefaultSyncPeriod         = 30 * time.Second
	DefaultHealthzBindAddress = "0.0.0.0:10256"
)

// Syncer applies the desired state to the kernel in one atomic batch per call
// (daemon/proxy/nftrules). A full sync (changes.Full) rewrites everything; otherwise
// only changes.Changed service ports may differ from the previous call.
type Syncer interface {
	Sync(ctx context.Context, snap *desired.Snapshot, changes desired.Changes) error
}

// Cleaner removes everything a Syncer ever programmed (plinthd --cleanup).
type Cleaner interface {
	Cleanup(ctx context.Context) error
}

// ConntrackCleaner deletes the UDP conntrack flows the matches select, returning how
// many it deleted (kernel/conntrack.Deleter).
type ConntrackCleaner interface {
	DeleteUDP(ctx context.Context, matches []conntrack.Match) (int, error)
}

// Config is what the proxy needs; zero durations take the defaults.
type Config struct {
	NodeName  string
	Sources   Sources
	Syncer    Syncer
	Conntrack ConntrackCleaner

	// NodePortAddresses are --nodeport-addresses CIDRs; nil means the node's primary
	// addresses (its InternalIPs).
	NodePortAddresses []netip.Prefix
	ClusterCIDRs      []netip.Prefix
	ServiceCIDRs      []netip.Prefix

	MinSyncPeriod time.Duration
	SyncPeriod    time.Duration
	// HealthzBindAddress is where /healthz and /livez listen; empty serves nothing.
	HealthzBindAddress string

	Clock      clock.WithTicker
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Proxy keeps the node's Service rules in line with the API.
type Proxy struct {
	cfg       Config
	tracker   *tracker
	snap      *snapshotter
	health    *healthState
	metrics   *metrics
	runner    *syncRunner
	informers *informers
	svcHealth *serviceHealth
	logger    *slog.Logger

	healthAddr chan net.Addr // receives the bound health address once
	// syncing is set once the informers synced and rule syncs began.
	syncing atomic.Bool
}

// New checks cfg and builds a Proxy; Run starts it.
func New(cfg Config) (*Proxy, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("proxy: NodeName is empty")
	}
	if cfg.Syncer == nil || cfg.Conntrack == nil {
		return nil, errors.New("proxy: Syncer and Conntrack are required")
	}
	if cfg.Sources.Services == nil || cfg.Sources.EndpointSlices == nil || cfg.Sources.Node == nil {
		return nil, errors.New("proxy: Sources needs ListerWatchers for services, endpointslices and the node")
	}
	if cfg.MinSyncPeriod == 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.MinSyncPeriod < 0 || cfg.SyncPeriod < cfg.MinSyncPeriod {
		return nil, fmt.Errorf("proxy: minSyncPeriod %s and syncPeriod %s: want 0 < minSyncPeriod <= syncPeriod", cfg.MinSyncPeriod, cfg.SyncPeriod)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("proxy metrics: %w", err)
	}
	p := &Proxy{
		cfg:     cfg,
		tracker: newTracker(),
		snap: newSnapshotter(snapshotSettings{
			nodeName: cfg.NodeName, nodePortPrefixes: cfg.NodePortAddresses,
			clusterCIDRs: cfg.ClusterCIDRs, serviceCIDRs: cfg.ServiceCIDRs,
		}),
		health:     newHealthState(cfg.Clock, 2*cfg.SyncPeriod),
		metrics:    m,
		informers:  newInformers(cfg.Sources),
		logger:     cfg.Logger,
		healthAddr: make(chan net.Addr, 1),
	}
	p.runner = newSyncRunner(cfg.Clock, cfg.MinSyncPeriod, cfg.SyncPeriod, p.syncOnce)
	p.svcHealth = newServiceHealth(listenAllAddresses, func() bool { ok, _, _ := p.health.healthy(); return ok }, p.logger)
	if err := p.informers.addHandlers(p); err != nil {
		return nil, err
	}
	// Until the first sync, the whole rule set is a pending change.
	p.queue()
	return p, nil
}

// Check is the proxy's plinthd health check: like /livez, it fails when a queued
// change waited more than 2 × syncPeriod, but only once syncs began. Before that the
// control service is unreachable, and the rules of the last run stay in place (fail
// static); restarting plinthd, which the watchdog would do on a failed check, cannot
// help, while /healthz on the proxy's port does report it to load balancers.
func (p *Proxy) Check() error {
	if !p.syncing.Load() {
		return nil
	}
	return p.health.check()
}

// HealthAddr receives the health server's address once it listens.
func (p *Proxy) HealthAddr() <-chan net.Addr { return p.healthAddr }

// Run watches the API and syncs until ctx is done. The first sync waits until the
// informers listed everything, so a restart never programs an empty rule set over
// working rules. It returns an error only when the health server cannot listen.
func (p *Proxy) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil) // before wg.Wait: defers run last first
	if p.cfg.HealthzBindAddress != "" {
		handler := healthHandler{state: p.health, nodeDeleting: p.tracker.nodeDeleting, metrics: p.metrics}
		wg.Go(func() {
			err := serveHealth(ctx, p.cfg.HealthzBindAddress, handler.mux(), func(a net.Addr) { p.healthAddr <- a }, p.logger)
			if err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	wg.Go(func() { p.informers.services.Run(ctx.Done()) })
	wg.Go(func() { p.informers.slices.Run(ctx.Done()) })
	wg.Go(func() { p.informers.node.Run(ctx.Done()) })
	if !cache.WaitForCacheSync(ctx.Done(), p.informers.hasSynced) {
		return causeUnlessCanceled(ctx)
	}
	p.logger.Info("service proxy: informers synced; starting rule syncs",
		"min_sync_period", p.cfg.MinSyncPeriod, "sync_period", p.cfg.SyncPeriod)
	p.syncing.Store(true)
	p.runner.run(ctx)
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelStop()
	p.svcHealth.stop(stopCtx)
	return causeUnlessCanceled(ctx)
}

func causeUnlessCanceled(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// queue notes a pending change for health and metrics.
func (p *Proxy) queue() {
	now := p.health.queued()
	p.metrics.lastQueued.Set(float64(now.UnixNano()) / 1e9)
}

func (p *Proxy) changed(full bool) {
	p.queue()
	svc, eps := p.tracker.pending()
	p.metrics.serviceChangesPend.Set(float64(svc))
	p.metrics.endpointChangesPend.Set(float64(eps))
	p.runner.request(full)
}

func (p *Proxy) onService(obj any, deleted bool) {
	svc, ok := unwrapTombstone(obj).(*corev1.Service)
	if !ok {
		return
	}
	var changed bool
	if deleted {
		changed = p.tracker.deleteService(svc.Namespace, svc.Name)
	} else {
		changed = p.tracker.upsertService(svc)
	}
	if changed {
		p.metrics.serviceChanges.Inc()
		p.changed(false)
	}
}

func (p *Proxy) onSlice(obj any, deleted bool) {
	s, ok := unwrapTombstone(obj).(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	var changed bool
	if deleted {
		changed = p.tracker.deleteSlice(s.Namespace, s.Name)
	} else {
		changed = p.tracker.upsertSlice(s, triggerTime(s))
	}
	if changed {
		p.metrics.endpointChanges.Inc()
		p.changed(false)
	}
}

func (p *Proxy) onNode(obj any, deleted bool) {
	n, ok := unwrapTombstone(obj).(*corev1.Node)
	if !ok || n.Name != p.cfg.NodeName {
		return
	}
	facts := nodeFactsOf(n)
	if deleted {
		// The Node is gone: keep its addresses (the rules stay, fail static) but
		// report it as not eligible.
		facts.deleting = true
	}
	if p.tracker.setNode(facts) {
		p.changed(true)
	}
}

// syncOnce builds the desired state from what changed and hands it to the Syncer;
// after success it deletes the stale UDP flows and records the metrics.
func (p *Proxy) syncOnce(ctx context.Context, full bool) error {
	p.health.syncStarted()
	w := p.tracker.take(full)
	p.metrics.serviceChangesPend.Set(0)
	p.metrics.endpointChangesPend.Set(0)
	start := p.cfg.Clock.Now()
	b := p.snap.build(w)
	err := p.cfg.Syncer.Sync(ctx, b.snapshot, b.changes)
	end := p.cfg.Clock.Now()
	elapsed := end.Sub(start).Seconds()
	p.metrics.syncDuration.Observe(elapsed)
	if b.changes.Full {
		p.metrics.syncFullDuration.Observe(elapsed)
	} else {
		p.metrics.syncPartialDuration.Observe(elapsed)
	}
	if err != nil {
		p.metrics.syncFailures.Inc()
		p.tracker.giveBack(w)
		p.queue()
		p.logger.Error("service proxy: sync failed; retrying with a full sync", "full", b.changes.Full,
			"services", len(w.services), "err", err)
		return err
	}
	p.snap.commit(b)
	p.health.synced()
	p.svcHealth.update(p.snap.healthChecks)
	p.metrics.lastSync.Set(float64(end.UnixNano()) / 1e9)
	internal, external := p.snap.noLocalTotals()
	p.metrics.noLocalEndpoints.WithLabelValues("internal").Set(float64(internal))
	p.metrics.noLocalEndpoints.WithLabelValues("external").Set(float64(external))
	for _, times := range w.triggers {
		for _, t := range times {
			if d := end.Sub(t); d > 0 {
				p.metrics.programming.Observe(d.Seconds())
			}
		}
	}
	p.logger.Debug("service proxy: synced", "full", b.changes.Full, "service_ports", len(b.snapshot.Services),
		"changed", len(b.changes.Changed), "seconds", elapsed)
	p.deleteStaleFlows(ctx, b.changes)
	return nil
}

// deleteStaleFlows deletes the UDP flows the sync made stale. A failure is logged and
// counted, not retried: the rules are right, and a stale flow ends with its timeout.
func (p *Proxy) deleteStaleFlows(ctx context.Context, c desired.Changes) {
	matches, n, err := DeleteStaleUDPFlows(ctx, p.cfg.Conntrack, c)
	p.metrics.conntrackDeleted.Add(float64(n))
	if err != nil {
		p.metrics.conntrackFailures.Inc()
		p.logger.Warn("service proxy: deleting stale UDP conntrack entries", "matches", matches, "deleted", n, "err", err)
	}
}

// DeleteStaleUDPFlows deletes through ct the UDP flows c names stale (its
// StaleUDPEndpoints and StaleUDPServices), returning how many matches that made and how
// many flows went. It is what the proxy does after each applied sync; exported so the
// kernel tests with real traffic (daemon/proxy/nftrules) exercise the same path.
func DeleteStaleUDPFlows(ctx context.Context, ct ConntrackCleaner, c desired.Changes) (matches, deleted int, err error) {
	m := conntrackMatches(c.StaleUDPEndpoints, c.StaleUDPServices)
	if len(m) == 0 {
		return 0, 0, nil
	}
	deleted, err = ct.DeleteUDP(ctx, m)
	return len(m), deleted, err
}

// conntrackMatches turns the stale UDP lists into conntrack matches: flows to the
// service address (or its node port) DNATed to the endpoint, or all flows to it.
func conntrackMatches(eps []desired.StaleUDPEndpoint, svcs []desired.StaleUDPService) []conntrack.Match {
	var out []conntrack.Match
	for _, e := range eps {
		out = append(out, conntrack.Match{Dst: e.Service, DNATTo: e.Endpoint})
		if e.NodePort != 0 {
			out = append(out, conntrack.Match{DstPort: e.NodePort, DNATTo: e.Endpoint})
		}
	}
	for _, s := range svcs {
		out = append(out, conntrack.Match{Dst: s.Service})
		if s.NodePort != 0 {
			out = append(out, conntrack.Match{DstPort: s.NodePort})
		}
	}
	return out
}
