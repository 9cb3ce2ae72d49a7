//go:build linux

package plinthd

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/podnet"
	"github.com/plinth/plinth/daemon/pods"
	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/daemon/pods/runc"
	"github.com/plinth/plinth/daemon/proxy"
	"github.com/plinth/plinth/daemon/seccomp"
	"github.com/plinth/plinth/daemon/staticpods"
	"github.com/plinth/plinth/internal/version"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

// podRuntime runs the pods bound to this node: it waits for the node's pod CIDRs,
// builds the pod network and the Supervisor, feeds the Supervisor from an informer on
// the node's pods, writes the pods' status and confirms their deletions.
type podRuntime struct {
	cfg      config.Config
	client   nodeclient.Interface
	nodeName string
	registry prometheus.Registerer
	logger   *slog.Logger

	// failed is set when the runtime could not be built; /healthz reports it.
	failed atomic.Pointer[error]
	// supervisor is set once the runtime is built (for the pressure evictor).
	supervisor atomic.Pointer[pods.Supervisor]
	status     *podStatusWriter
	// gc is set once the runtime runs its pods (for node-level reclaim); diskPressure
	// is the last DiskPressure status the pressure manager reported.
	gc           atomic.Pointer[podGC]
	diskPressure atomic.Bool

	// evicted holds the pods stopped by plinthd itself (evicted under node pressure,
	// or stopped by graceful node shutdown), kept out of every later Sync so they are
	// not started again (they stay in the API as Failed).
	evictedMu sync.Mutex
	evicted   map[types.UID]bool

	// shuttingDown reports a graceful node shutdown under way (nil when the feature is
	// off); set before run.
	shuttingDown func() bool

	// lastNode is the node as admission last read it, to admit from when a read fails.
	lastNodeMu sync.Mutex
	lastNode   *corev1.Node
	lastNodeAt time.Time
}

func newPodRuntime(cfg config.Config, client nodeclient.Interface, nodeName string, registry prometheus.Registerer, logger *slog.Logger) *podRuntime {
	logger = logger.With("component", "pods")
	return &podRuntime{cfg: cfg, client: client, nodeName: nodeName, registry: registry, logger: logger,
		status: newPodStatusWriter(client, logger), evicted: map[types.UID]bool{}}
}

// Check is the runtime's health: failing once it could not be built.
func (r *podRuntime) Check() error {
	if err := r.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// run builds the runtime and drives it until ctx is done; the containers keep running
// when it returns (pods outlive plinthd: the next one adopts them).
func (r *podRuntime) run(ctx context.Context) {
	sup, store, err := r.build(ctx)
	var gc *podGC
	if err == nil {
		gc, err = newPodGC(r.cfg, sup, store, newGCPodStates(sup, r.isEvicted), r.registry, r.logger)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Error("the pod runtime could not start; no pods run on this node", "err", err)
			r.failed.Store(&err)
		}
		return
	}
	r.supervisor.Store(sup)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.status.run(ctx) })
	r.syncLoop(ctx, sup, gc)
	sup.Shutdown()
}

// build waits for the node's pod CIDRs and makes the Supervisor over the image store.
func (r *podRuntime) build(ctx context.Context) (*pods.Supervisor, *images.Store, error) {
	cfg := r.cfg
	shim, err := shimPath(cfg.Pods.ShimPath)
	if err != nil {
		return nil, nil, err
	}
	r.logger.Info("waiting for the node's pod CIDRs")
	cidrs, err := podnet.WaitForPodCIDRs(ctx, r.client, r.nodeName)
	if err != nil {
		return nil, nil, err
	}
	clusterCIDRs, err := proxy.ParseCIDRs(cfg.Proxy.ClusterCIDRs)
	if err != nil {
		return nil, nil, fmt.Errorf("proxy.clusterCIDRs%w", err)
	}
	var clusterPrefixes []netip.Prefix
	for _, c := range clusterCIDRs {
		p, err := netip.ParsePrefix(c.String())
		if err != nil {
			return nil, nil, fmt.Errorf("proxy.clusterCIDRs: %q: %w", c, err)
		}
		clusterPrefixes = append(clusterPrefixes, p)
	}
	bridge, err := podnet.New(podnet.Config{PodCIDRs: cidrs, ClusterCIDRs: clusterPrefixes,
		BridgeName: cfg.Pods.BridgeName, TableName: cfg.Pods.NetworkTable, NodeNetNS: cfg.Pods.NetworkNamespace,
		NetNSDir: filepath.Join(cfg.Pods.RuntimeDir, "netns"), StateDir: filepath.Join(cfg.StateDir, "podnet")},
		r.logger.With("component", "podnet"))
	if err != nil {
		return nil, nil, fmt.Errorf("pod network on %v: %w", cidrs, err)
	}
	r.logger.Info("pod network ready", "pod_cidrs", cidrs, "bridge", cfg.Pods.BridgeName)
	store, err := images.Open(images.Options{Root: cfg.ImagesDir(), Logger: r.logger.With("component", "images"), Registerer: r.registry})
	if err != nil {
		return nil, nil, fmt.Errorf("image store (pods.imagesDir): %w", err)
	}
	driver, err := runc.New(runc.Config{Runc: cfg.Pods.RuncPath, Root: filepath.Join(cfg.Pods.RuntimeDir, "runc"),
		StateDir: cfg.CheckpointsDir(), ShimCommand: []string{shim}}, clock.RealClock{})
	if err != nil {
		return nil, nil, fmt.Errorf("runc (pods.runcPath): %w", err)
	}
	limits, err := runc.RuntimeLimits()
	if err != nil {
		return nil, nil, err
	}
	host, err := cgroup.DetectHost()
	if err != nil {
		return nil, nil, err
	}
	swap, err := containerSwap(cfg, features.HostSystem(), host.Mode, r.logger)
	if err != nil {
		return nil, nil, err
	}
	resolv, err := os.ReadFile(cfg.Pods.ResolvConf)
	if err != nil {
		return nil, nil, fmt.Errorf("pods.resolvConf: %w", err)
	}
	node, err := r.client.Nodes().Get(ctx, r.nodeName, getOptions)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: %w", r.nodeName, err)
	}
	var hostIPs []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			hostIPs = append(hostIPs, a.Address)
		}
	}
	metrics, err := pods.NewMetrics(r.registry)
	if err != nil {
		return nil, nil, fmt.Errorf("pod runtime metrics: %w", err)
	}
	wc := &pods.WorkerConfig{
		Runtime: driver, Images: pods.StoreImages{Store: store}, Network: pods.PodnetNetwork{Network: bridge},
		Seccomp: seccomp.New(seccomp.Config{Root: cfg.SeccompRoot(), SeccompDefault: cfg.Pods.SeccompDefault}),
		Cgroups: podcgroup.Manager{Parent: cfg.Pods.CgroupParent}, CgroupParent: cfg.Pods.CgroupParent,
		PodsDir: cfg.PodsDir(), LogsDir: cfg.PodLogsDir, SandboxDir: filepath.Join(cfg.Pods.RuntimeDir, "pods"),
		ResolvConf: resolv, ClusterDomain: cfg.Pods.ClusterDomain, HostIPs: hostIPs,
		NodeMemoryBytes: node.Status.Capacity.Memory().Value(), NodeMilliCPU: node.Status.Capacity.Cpu().MilliValue(),
		PodPidsLimit: cfg.Pods.PodPidsLimit, Limits: limits, CgroupNamespace: host.Mode == cgroup.Unified, Swap: swap,
		Prober: pods.Prober{Exec: driver, UserAgent: "kube-probe/" + version.String()},
		Clock:  clock.RealClock{}, Logger: r.logger,
		Report: r.status.report, PullSecrets: r.pullSecrets, Metrics: metrics,
	}
	return pods.NewSupervisor(wc, r.confirmDeletion), store, nil
}

// shimPath is pods.shimPath, else plinth-shim next to this binary, else in PATH.
func shimPath(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "plinth-shim")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("plinth-shim")
	if err != nil {
		return "", fmt.Errorf("pods.shimPath: plinth-shim is neither next to plinthd nor in PATH: %w", err)
	}
	return p, nil
}

// syncLoop feeds the Supervisor every pod bound to the node whenever one changes, and
// removes the containers of pods deleted while plinthd was down after the first full
// list.
func (r *podRuntime) syncLoop(ctx context.Context, sup *pods.Supervisor, gc *podGC) {
	var wg sync.WaitGroup
	defer wg.Wait()
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	static, err := r.startStaticPods(ctx, poke, &wg)
	if err != nil {
		r.logger.Error("static pods are off", "err", err)
	}
	informer := cache.NewSharedIndexInformer(nodeclient.NodePodsListerWatcher(r.client, r.nodeName), &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		r.logger.Error("pod informer", "err", err)
		return
	}
	wg.Go(func() { informer.Run(ctx.Done()) })
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	// The API's pods bound to the node, without mirror pods (their static pods run
	// from their files), then the static pods.
	list := func() (api, all []*corev1.Pod) {
		for _, o := range informer.GetStore().List() {
			if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == r.nodeName && !staticpods.IsMirrorPod(p) {
				api = append(api, p)
			}
		}
		return api, append(slices.Clip(api), static.current()...)
	}
	// Static pods are known before the first sync, or their containers would be
	// taken for orphans; a Source that has not read its directory in time leaves the
	// orphans for the next start.
	staticKnown := static.waitFirst(ctx, staticFirstReadTimeout)
	if ctx.Err() != nil {
		return
	}
	gate := newPodGate(r.currentNode, r.status.report, time.Now)
	gate.shuttingDown = r.shuttingDown
	_, first := list()
	r.status.track(first)
	sup.Sync(gate.filter(ctx, first, true))
	if !staticKnown {
		r.logger.Warn("static pods not read in time; containers of pods deleted while plinthd was down are left for now")
	} else if err := sup.RemoveOrphans(ctx, first); err != nil {
		r.logger.Warn("removing containers of pods deleted while plinthd was down", "err", err)
	}
	// Garbage collection starts once every pod has its worker, so no pod's current
	// container is taken for a dead one.
	gc.states.update(first, static.read())
	gc.run(ctx, &wg)
	r.gc.Store(gc) // node-level reclaim too
	r.logger.Info("running the node's pods", "pods", len(first))
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			_, all := list()
			r.status.track(all)
			sup.Sync(r.withoutEvicted(gate.filter(ctx, all, false)))
			gc.states.update(all, static.read())
		}
	}
}

// isEvicted reports whether this runtime evicted the pod under node pressure.
func (r *podRuntime) isEvicted(uid types.UID) bool {
	r.evictedMu.Lock()
	defer r.evictedMu.Unlock()
	return r.evicted[uid]
}

// evict stops a pod the runtime runs, for node-pressure eviction, giving its
// containers grace (pressure.PodGracePeriod: the pod's own), and then fails it in the
// API with reason Evicted and message; false when the runtime does not run it.
func (r *podRuntime) evict(uid types.UID, message string, grace time.Duration) bool {
	var override *time.Duration
	if grace >= 0 {
		override = &grace
	}
	return r.stop(uid, override, func(pod *corev1.Pod, st *corev1.PodStatus) {
		st.Reason, st.Message = evictedReason, message
		if pod != nil {
			r.logger.Info("pod evicted", "pod", pod.Namespace+"/"+pod.Name, "message", message)
		}
	}, nil)
}

// stop stops a pod the runtime runs (with grace when not nil, else the pod's own grace
// period) and keeps it out of later syncs. Every status it reports from then on is
// Failed with what mark adds (a terminal phase cannot change once in the API, so the
// pod must never show Succeeded on the way); the last is written once its containers
// are gone, then after (when not nil) is called. mark gets a nil pod while adjusting
// the statuses on the way and the pod with the last one. False when the runtime does
// not run it or already stops it.
func (r *podRuntime) stop(uid types.UID, grace *time.Duration, mark func(pod *corev1.Pod, st *corev1.PodStatus), after func()) bool {
	sup := r.supervisor.Load()
	if sup == nil {
		return false
	}
	r.evictedMu.Lock()
	already := r.evicted[uid]
	r.evicted[uid] = true
	r.evictedMu.Unlock()
	adjust := func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		mark(nil, st)
	}
	ok := sup.Kill(uid, pods.KillOptions{GracePeriodOverride: grace, Status: adjust}, func(pod *corev1.Pod, last corev1.PodStatus) {
		last.Phase = corev1.PodFailed
		mark(pod, &last)
		r.status.report(pod, last)
		if after != nil {
			after()
		}
	})
	if !ok && !already {
		r.evictedMu.Lock()
		delete(r.evicted, uid)
		r.evictedMu.Unlock()
	}
	return ok
}

// runningPods are the pods the runtime runs and is not stopping, and that have not
// finished: kubelet's active pods, what node-pressure eviction may choose from (none
// before the runtime is built).
func (r *podRuntime) runningPods() []*corev1.Pod {
	sup := r.supervisor.Load()
	if sup == nil {
		return nil
	}
	return r.status.unfinished(sup.Pods())
}

// evictedReason is the reason of a pod evicted under node pressure, as kubelet's.
const evictedReason = "Evicted"

// evictedGone reports, for a pod this runtime evicted (ours), whether its containers
// are gone.
func (r *podRuntime) evictedGone(uid types.UID) (gone, ours bool) {
	r.evictedMu.Lock()
	ours = r.evicted[uid]
	r.evictedMu.Unlock()
	sup := r.supervisor.Load()
	if !ours || sup == nil {
		return false, false
	}
	return !sup.Running(uid), true
}

// withoutEvicted leaves out the pods evicted under pressure unless they are being
// deleted (their deletion is then confirmed as any other's). Evicted pods no longer
// listed are forgotten.
func (r *podRuntime) withoutEvicted(pods []*corev1.Pod) []*corev1.Pod {
	r.evictedMu.Lock()
	defer r.evictedMu.Unlock()
	if len(r.evicted) == 0 {
		return pods
	}
	listed := map[types.UID]bool{}
	out := pods[:0:0]
	for _, p := range pods {
		listed[p.UID] = true
		if !r.evicted[p.UID] || p.DeletionTimestamp != nil {
			out = append(out, p)
		}
	}
	for uid := range r.evicted {
		if !listed[uid] && (r.supervisor.Load() == nil || !r.supervisor.Load().Running(uid)) {
			delete(r.evicted, uid)
		}
	}
	return out
}

// pullSecrets reads a pod's imagePullSecrets from the API (nodeclient.PullSecrets);
// one that cannot be read is left out and logged, and the pull tries with the rest, as
// kubelet does.
func (r *podRuntime) pullSecrets(pod *corev1.Pod) []corev1.Secret {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	secrets, errs := nodeclient.PullSecrets(ctx, r.client, pod)
	for _, err := range errs {
		r.logger.Warn("image pull secret unavailable", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	return secrets
}

// currentNode reads this node for admission. When the read fails (a busy or
// unreachable control service) it returns the node as last read, as kubelet admits from
// its informer's copy: refusing every pod because one GET failed would fail pods the
// node has room for. nil only when the node was never read.
func (r *podRuntime) currentNode(ctx context.Context) *corev1.Node {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := r.client.Nodes().Get(ctx, r.nodeName, getOptions)
	r.lastNodeMu.Lock()
	defer r.lastNodeMu.Unlock()
	if err != nil {
		if r.lastNode == nil {
			r.logger.Warn("reading the node for pod admission; no earlier copy to admit from", "err", err)
			return nil
		}
		r.logger.Warn("reading the node for pod admission; admitting from the copy read earlier", "read_at", r.lastNodeAt, "err", err)
		return r.lastNode.DeepCopy()
	}
	r.lastNode, r.lastNodeAt = n.DeepCopy(), time.Now()
	return n
}

// confirmDeletion tells the control service that a pod's containers are gone: a
// delete with grace period 0, for this pod's UID only (a pod of the same name created
// since is another pod).
func (r *podRuntime) confirmDeletion(uid types.UID) {
	ref, ok := r.status.forget(uid)
	if !ok || ref.Static {
		return // not a pod in the API any more (an orphan), or a static pod
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := int64(0)
	err := r.client.Pods(ref.Namespace).Delete(ctx, ref.Name, deleteOptions(&zero, uid))
	switch {
	case err == nil:
		r.logger.Info("pod deleted", "pod", ref.Namespace+"/"+ref.Name, "uid", uid)
	case isGone(err):
	default:
		r.logger.Warn("confirming a pod's deletion", "pod", ref.Namespace+"/"+ref.Name, "uid", uid, "err", err)
	}
}

// stopForShutdown stops a pod for graceful node shutdown with grace and marks it as
// kubelet's shutdown manager does; done is called once its containers are gone and its
// status handed to the status writer. False when the runtime does not run it.
func (r *podRuntime) stopForShutdown(uid types.UID, grace time.Duration, done func()) bool {
	now := time.Now() // one transition time for every status of the stop
	return r.stop(uid, &grace, func(pod *corev1.Pod, st *corev1.PodStatus) {
		markShutdownTerminated(st, now)
		if pod != nil {
			r.logger.Info("pod stopped for the node's shutdown", "pod", pod.Namespace+"/"+pod.Name, "grace_period", grace)
		}
	}, done)
}
