//go:build linux

package pods

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/pods/sandbox"
)

// Supervisor keeps one PodWorker per pod bound to the node: the piece plinthd's pod
// informer feeds. It owns the workers' goroutines.
type Supervisor struct {
	cfg *WorkerConfig
	// gone is called once a pod's containers are stopped and removed (plinthd then
	// confirms the deletion to the control service).
	gone func(uid types.UID)

	mu      sync.Mutex
	workers map[types.UID]*supervised
	// confirmed holds the pods terminated for deletion, with when gone was last
	// called for each: the API keeps listing a pod (with its deletionTimestamp) until
	// the confirmation lands, and every Sync meanwhile must not terminate it again.
	confirmed map[types.UID]time.Time
	wg        sync.WaitGroup
}

// reconfirmAfter is how long a terminated pod may stay listed before gone is called
// for it again (its confirmation was lost or refused).
const reconfirmAfter = 30 * time.Second

type supervised struct {
	w           *PodWorker
	cancel      context.CancelFunc
	done        chan struct{}
	terminating bool
}

// NewSupervisor returns a Supervisor whose workers use cfg; gone may be nil.
func NewSupervisor(cfg *WorkerConfig, gone func(uid types.UID)) *Supervisor {
	return &Supervisor{cfg: cfg, gone: gone, workers: map[types.UID]*supervised{}, confirmed: map[types.UID]time.Time{}}
}

// Sync makes the workers match pods, the pods bound to this node: a new pod gets a
// worker; a pod with a deletionTimestamp, or one no longer listed, is terminated in
// the background with its grace period, after which gone is called. Sync never blocks
// on a container.
func (s *Supervisor) Sync(pods []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		listed[p.UID] = p
		sv, running := s.workers[p.UID]
		switch {
		case p.DeletionTimestamp != nil && running && !sv.terminating:
			s.terminate(p.UID, sv, p)
		case p.DeletionTimestamp == nil && !running && !terminal(p):
			s.start(p)
		case p.DeletionTimestamp != nil && !running:
			if at, done := s.confirmed[p.UID]; done {
				// Its containers are gone and its deletion confirmed; the API has
				// not caught up yet.
				s.reconfirm(p.UID, at)
				break
			}
			// Deleted while no worker ran it (plinthd was down, or the pod had
			// finished before this plinthd started): stop whatever containers the
			// runtime still has for it, so the deletion can be confirmed.
			s.terminateUnstarted(p)
		}
	}
	for uid, sv := range s.workers {
		if _, ok := listed[uid]; !ok && !sv.terminating {
			s.terminate(uid, sv, nil)
		}
	}
	for uid := range s.confirmed {
		if _, ok := listed[uid]; !ok {
			delete(s.confirmed, uid)
		}
	}
}

// reconfirm calls gone again for a terminated pod still listed reconfirmAfter after
// the last call. Called with s.mu held.
func (s *Supervisor) reconfirm(uid types.UID, last time.Time) {
	if s.gone == nil || s.cfg.Clock.Since(last) < reconfirmAfter {
		return
	}
	s.confirmed[uid] = s.cfg.Clock.Now()
	s.wg.Go(func() { s.gone(uid) })
}

// terminal pods (Succeeded or Failed in the API) are not started again, as kubelet.
func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (s *Supervisor) start(p *corev1.Pod) {
	ctx, cancel := context.WithCancel(context.Background())
	sv := &supervised{w: NewPodWorker(s.cfg, p), cancel: cancel, done: make(chan struct{})}
	s.workers[p.UID] = sv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(sv.done)
		if err := sv.w.Run(ctx); err != nil {
			s.cfg.Logger.Error("pod worker", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	}()
}

// terminate stops the worker's Run, then its containers; latest (nil when the pod is
// gone from the API) carries the deletion's grace period.
func (s *Supervisor) terminate(uid types.UID, sv *supervised, latest *corev1.Pod) {
	sv.terminating = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sv.cancel()
		<-sv.done
		if latest != nil {
			sv.w.pod = latest.DeepCopy() // Run has returned: nothing else reads it now
		}
		if err := sv.w.Terminate(context.Background()); err != nil {
			s.cfg.Logger.Error("terminate pod", "uid", uid, "err", err)
			return // kept as terminating: the next plinthd retries from the checkpoints
		}
		s.mu.Lock()
		delete(s.workers, uid)
		s.confirmed[uid] = s.cfg.Clock.Now()
		s.mu.Unlock()
		if s.gone != nil {
			s.gone(uid)
		}
	}()
}

// terminateUnstarted terminates a pod no worker ran: its worker claims the pod's
// containers from the runtime instead of adopting them in Run.
func (s *Supervisor) terminateUnstarted(p *corev1.Pod) {
	done := make(chan struct{})
	close(done)
	sv := &supervised{w: NewPodWorker(s.cfg, p), cancel: func() {}, done: done}
	if err := sv.w.claim(); err != nil {
		s.cfg.Logger.Warn("list containers of deleted pod", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
	s.workers[p.UID] = sv
	s.terminate(p.UID, sv, p)
}

// Evict stops a running pod's containers for node-pressure eviction, with grace
// between the stop signal and SIGKILL (a negative grace means the pod's own grace
// period), and removes what the pod held on the node; the pod stays in the API (the
// caller marks it Failed, reason Evicted). done, when not nil, gets the pod's last
// status once its containers are gone. Evict reports whether the pod had a worker that
// was not terminating already. The caller must keep the pod out of later Syncs, or it
// would be started again.
func (s *Supervisor) Evict(uid types.UID, grace time.Duration, done func(pod *corev1.Pod, last corev1.PodStatus)) bool {
	var opts KillOptions
	if grace >= 0 {
		opts.GracePeriodOverride = &grace
	}
	return s.Kill(uid, opts, done)
}

// KillOptions say how Kill stops a pod.
type KillOptions struct {
	// GracePeriodOverride, when not nil, replaces the pod's grace period (graceful node
	// shutdown gives each priority band its time, as kubelet's kill with a grace period
	// override does).
	GracePeriodOverride *time.Duration
	// Status, when not nil, adjusts every status the pod reports from the kill on
	// (Failed with the killer's reason), so that no status without it reaches the API
	// first: a terminal phase cannot change once written, and containers exiting 0 on
	// SIGTERM would otherwise make the pod Succeeded.
	Status func(*corev1.PodStatus)
}

// Kill is Evict with options.
func (s *Supervisor) Kill(uid types.UID, opts KillOptions, done func(pod *corev1.Pod, last corev1.PodStatus)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.workers[uid]
	if !ok || sv.terminating {
		return false
	}
	sv.terminating = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sv.cancel()
		<-sv.done
		// Run has returned: nothing else reads the worker now.
		sv.w.statusAdjust = opts.Status
		grace := GracePeriod(sv.w.pod)
		if opts.GracePeriodOverride != nil {
			grace = *opts.GracePeriodOverride
		}
		if err := sv.w.terminate(context.Background(), grace); err != nil {
			s.cfg.Logger.Error("stop pod", "uid", uid, "err", err)
		}
		s.mu.Lock()
		delete(s.workers, uid)
		s.mu.Unlock()
		if done != nil {
			var last corev1.PodStatus
			if st := sv.w.Status(); st != nil {
				last = *st.DeepCopy()
			}
			done(sv.w.pod, last)
		}
	}()
	return true
}

// Running reports whether the pod has a worker (running, or still terminating).
func (s *Supervisor) Running(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.workers[uid]
	return ok
}

// Pods returns the pods that have a worker not being stopped (deleted or evicted):
// kubelet's active pods, the ones node-pressure eviction may choose from. Pods bound
// to the node that no worker runs yet are not among them.
func (s *Supervisor) Pods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(s.workers))
	for _, sv := range s.workers {
		if !sv.terminating {
			// A worker's pod changes only once it is terminating (see terminate).
			out = append(out, sv.w.pod.DeepCopy())
		}
	}
	return out
}

// Shutdown stops every worker without stopping its containers (plinthd is exiting;
// the next one adopts them) and waits for terminations already under way.
func (s *Supervisor) Shutdown() {
	s.mu.Lock()
	for _, sv := range s.workers {
		if !sv.terminating {
			sv.cancel()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// RemoveOrphans deletes runtime containers whose pod is not in pods (pods deleted
// while plinthd was down), with their pods' networks, sandboxes, cgroups and
// directories. Call
// it once after the first Sync.
func (s *Supervisor) RemoveOrphans(ctx context.Context, pods []*corev1.Pod) error {
	cps, err := s.cfg.Runtime.List()
	known := map[string]bool{}
	for _, p := range pods {
		known[string(p.UID)] = true
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	orphans := map[string]bool{}
	for _, cp := range cps {
		uid := cp.Labels["pod.uid"]
		if uid == "" || known[uid] {
			continue
		}
		orphans[uid] = true
		s.cfg.Logger.Info("removing orphaned container", "id", cp.ID, "pod.uid", uid)
		// Delete kills what still runs: the pod is gone, its grace period with it.
		if err := s.cfg.Runtime.Delete(ctx, cp.ID); err != nil {
			errs = append(errs, err)
		}
	}
	for uid := range orphans {
		if err := s.cfg.Network.Teardown(ctx, uid); err != nil {
			errs = append(errs, err)
		}
		if err := sandbox.Remove(filepath.Join(s.cfg.SandboxDir, uid)); err != nil {
			errs = append(errs, err)
		}
		if err := s.cfg.Cgroups.Remove(uid); err != nil {
			errs = append(errs, err)
		}
		if err := removePodDir(s.cfg.Images, filepath.Join(s.cfg.PodsDir, uid)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
