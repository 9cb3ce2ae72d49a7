//go:build linux

package plinthd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/pods"
	"github.com/plinth/plinth/daemon/pressure"
)

// podGC is the node's garbage collection of what pods leave: container GC every
// minute and image GC every 5 minutes (kubelet's periods and policies from the
// configuration), both started at once when DiskPressure rises, and both run
// synchronously, everything unused included, as the pressure manager's node-level
// reclaim before it evicts a pod for disk.
type podGC struct {
	containers *containergc.Collector
	images     *images.ImageGC
	states     *gcPodStates
	// nodefsDir and imagefsDir are on the file systems the disk signals measure.
	nodefsDir, imagefsDir string
	logger                *slog.Logger
}

func newPodGC(cfg config.Config, sup *pods.Supervisor, store *images.Store, states *gcPodStates,
	reg prometheus.Registerer, logger *slog.Logger) (*podGC, error) {
	g := &podGC{states: states, nodefsDir: cfg.NodefsDir(), imagefsDir: cfg.ImagefsDir(), logger: logger}
	garbage := sup.Garbage()
	collector, err := containergc.NewCollector(garbage, states, containergc.Config{
		Policy: cfg.ContainerGCPolicy(), Registerer: reg, Logger: logger.With("component", "container-gc")})
	if err != nil {
		return nil, fmt.Errorf("container garbage collection: %w", err)
	}
	g.containers = collector
	policy := images.GCPolicy{
		HighThresholdPercent: int(cfg.ImageGCHighThresholdPercent), LowThresholdPercent: int(cfg.ImageGCLowThresholdPercent),
		MinimumAge: cfg.ImageMinimumGCAge.Duration, MaximumAge: cfg.ImageMaximumGCAge.Duration,
	}
	g.images = images.NewImageGC(store, policy, imagesInUse(garbage, store, states), images.DefaultGCPeriod)
	return g, nil
}

// imagesInUse is what image GC must keep: the images under every container root on
// the node (running containers and dead ones not yet collected) and those of every pod
// that may still start a container (listed, not terminated), by the image IDs its
// status reports and by its spec's image names as the store resolves them now (a
// container between its pull and its start has no root yet).
func imagesInUse(garbage pods.Garbage, store *images.Store, states *gcPodStates) images.InUseFunc {
	return func() (map[string]bool, error) {
		used, err := garbage.ImagesInUse()
		if err != nil {
			return nil, err
		}
		for _, p := range states.live() {
			for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
				for _, cs := range list {
					if cs.ImageID != "" {
						used[cs.ImageID] = true
					}
				}
			}
			for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
				for _, c := range list {
					// A name the store cannot parse names no image it holds.
					if im, err := store.Lookup(c.Image); err == nil && im != nil {
						used[im.ID] = true
					}
				}
			}
		}
		return used, nil
	}
}

// run runs both collection loops until ctx is done, in goroutines wg owns.
func (g *podGC) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { g.containers.Run(ctx) })
	wg.Go(func() { g.images.Run(ctx) })
}

// trigger starts both collections now (DiskPressure rose).
func (g *podGC) trigger() {
	g.containers.Trigger()
	g.images.Trigger()
}

// reclaim is node-level reclaim for a disk signal: container GC with the containers of
// terminated pods, then every unused image. It returns how much of the signal's
// resource (bytes or inodes) is available now beyond before, as the file system counts
// it.
func (g *podGC) reclaim(ctx context.Context, signal pressure.Signal) (int64, error) {
	dir := g.nodefsDir
	if signal == pressure.SignalImagefsAvailable || signal == pressure.SignalImagefsInodesFree {
		dir = g.imagefsDir
	}
	inodes := signal.Resource() == pressure.ResourceInodes
	before, berr := available(dir, inodes)
	cres, cerr := g.containers.Collect(ctx, containergc.Options{EvictTerminatedPods: true})
	ires, ierr := g.images.CollectUnused(ctx)
	after, aerr := available(dir, inodes)
	var freed int64
	if berr == nil && aerr == nil {
		freed = max(after-before, 0)
	}
	g.logger.Info("node-level reclaim", "signal", signal, "containers", cres.Containers, "sandboxes", cres.Sandboxes,
		"logDirectories", cres.LogDirs, "imagesDeleted", ires.Deleted, "imageBytesFreed", ires.FreedBytes,
		"availableBefore", before, "availableAfter", after, "dir", dir)
	return freed, errors.Join(cerr, ierr, berr, aerr)
}

// available is the free bytes (or inodes) an unprivileged user may take on the file
// system holding dir, as the eviction signals measure it.
func available(dir string, inodes bool) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if inodes {
		return int64(st.Ffree), nil
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// gcPodStates answers container GC for the pods of this node from the pods the sources
// (the API and the static pod files) listed last, and the Supervisor's workers.
type gcPodStates struct {
	sup     *pods.Supervisor
	evicted func(types.UID) bool

	mu    sync.Mutex
	pods  map[types.UID]*corev1.Pod
	ready bool
}

var _ containergc.PodStates = (*gcPodStates)(nil)

func newGCPodStates(sup *pods.Supervisor, evicted func(types.UID) bool) *gcPodStates {
	return &gcPodStates{sup: sup, evicted: evicted, pods: map[types.UID]*corev1.Pod{}}
}

// update records the pods the sources list now; ready says every source has been read.
func (s *gcPodStates) update(list []*corev1.Pod, ready bool) {
	m := make(map[types.UID]*corev1.Pod, len(list))
	for _, p := range list {
		m[p.UID] = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.ready = m, ready
}

// PodState implements containergc.PodStates: once every source has been read, a pod
// none lists and no worker runs is deleted; a listed pod whose phase is final, or
// that was evicted, is terminated.
func (s *gcPodStates) PodState(uid types.UID) containergc.PodState {
	s.mu.Lock()
	p, listed := s.pods[uid]
	ready := s.ready
	s.mu.Unlock()
	if !listed {
		return containergc.PodState{Deleted: ready && !s.sup.Running(uid)}
	}
	return containergc.PodState{Terminated: terminalPhase(p) || (s.evicted(uid) && !s.sup.Running(uid))}
}

// AllSourcesReady implements containergc.PodStates.
func (s *gcPodStates) AllSourcesReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// live returns the listed pods that are not terminated (read-only).
func (s *gcPodStates) live() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(s.pods))
	for uid, p := range s.pods {
		if !terminalPhase(p) && !s.evicted(uid) {
			out = append(out, p)
		}
	}
	return out
}

func terminalPhase(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Reclaim implements pressure.NodeReclaimer: node-level garbage collection before an
// eviction for disk; nothing (0, nil) before the runtime has run its first sync (until
// every pod has its worker, a pod's current container could pass for a dead one).
func (r *podRuntime) Reclaim(ctx context.Context, signal pressure.Signal) (int64, error) {
	g := r.gc.Load()
	if g == nil {
		return 0, nil
	}
	return g.reclaim(ctx, signal)
}

// conditionsChanged starts both collections when DiskPressure has just become True.
func (r *podRuntime) conditionsChanged(conds []corev1.NodeCondition) {
	disk := false
	for _, c := range conds {
		if c.Type == corev1.NodeDiskPressure {
			disk = c.Status == corev1.ConditionTrue
		}
	}
	if was := r.diskPressure.Swap(disk); was || !disk {
		return
	}
	if g := r.gc.Load(); g != nil {
		r.logger.Info("DiskPressure: starting container and image garbage collection")
		g.trigger()
	}
}
