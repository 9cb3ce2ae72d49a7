package pressure

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// PodLister lists the pods on this node that eviction may choose from, with their
// current usage. Until plinthd runs pods itself it is backed by an informer on the
// pods the API says are bound to this node, joined with whatever usage is known
// (zero where none is: ranking then falls back on priority).
type PodLister interface {
	List(ctx context.Context) ([]Pod, error)
}

// Evictor stops pods for the eviction policy. The pod runtime implements it; until
// then it can evict through the API.
type Evictor interface {
	// Evict asks for pod to be stopped and marked evicted, message saying why (in
	// kubelet's words: the resource, the threshold, what was available and what the
	// pod used), its containers getting grace between the stop signal and SIGKILL
	// (HardEvictionGracePeriod, or PodGracePeriod for the pod's own). It returns once
	// the request is made, not when the pod has gone.
	Evict(ctx context.Context, pod Pod, message string, grace time.Duration) error
	// Gone reports whether an evicted pod has stopped and released what it used.
	Gone(pod Pod) bool
}

// NodeReclaimer frees disk at node level (garbage collection of dead containers and
// unused images) before any pod is evicted for a disk signal. signal says what is
// short (nodefs or imagefs, bytes or inodes); freed is in that signal's unit, for the
// log and metrics only: whether eviction is still needed is decided on a fresh
// observation.
type NodeReclaimer interface {
	Reclaim(ctx context.Context, signal Signal) (freed int64, err error)
}

// Grace periods of evicted pods. For a hard threshold kubelet ignores the pod's
// terminationGracePeriodSeconds and stops it at once (its
// immediateEvictionGracePeriodSeconds, 1 s). For a soft threshold the pod gets its own
// grace period, capped by evictionMaxPodGracePeriod when that is set (Config.
// MaxPodGracePeriod). kubelet's default of 0 there stops soft-evicted pods at once,
// which makes a soft threshold as abrupt as a hard one; plinthd reads 0 as no cap.
const (
	HardEvictionGracePeriod = time.Second
	PodGracePeriod          = time.Duration(-1)
)

// evictionGracePeriod is the grace period of pod evicted for threshold t, with
// maxPodGrace the cap on soft evictions (0: none).
func evictionGracePeriod(t Threshold, pod Pod, maxPodGrace time.Duration) time.Duration {
	if !t.Soft() {
		return HardEvictionGracePeriod
	}
	if maxPodGrace > 0 && pod.GracePeriod > maxPodGrace {
		return maxPodGrace
	}
	return PodGracePeriod
}

// DefaultPodGoneTimeout is how long eviction waits for an evicted pod to go before it
// may choose the next one (kubelet's podCleanupTimeout).
const DefaultPodGoneTimeout = 30 * time.Second

// evictionWorker acts on evaluations, one step at a time: node-level reclaim for a
// disk signal, then one pod eviction, then waiting for that pod to go. After each
// step it waits for an evaluation that began after the step finished, so it never
// acts on figures from before its own last action. It runs in its own goroutine, so
// a slow garbage collection or API call does not delay conditions.
type evictionWorker struct {
	pods        PodLister
	evictor     Evictor
	reclaimer   NodeReclaimer // may be nil
	clock       clock.Clock
	logger      *slog.Logger
	metrics     *metrics
	goneTimeout time.Duration
	// maxPodGrace caps the grace period of a pod evicted for a soft threshold (0:
	// none).
	maxPodGrace time.Duration

	// latest returns the newest evaluation; startedSeq the number of the newest
	// evaluation that has begun observing; poke asks for a fresh evaluation.
	latest     func() evaluation
	startedSeq func() uint64
	poke       func()
	notify     chan struct{} // a new evaluation is available

	// State owned by run.
	waiting       *Pod
	waitingSince  time.Time
	needAfter     uint64 // act only on evaluations numbered above this
	reclaimedFor  Signal // node-level reclaim already ran for this signal since the last eviction
	idleNoticeFor Signal // "no pod to evict" already logged for this signal
}

func (w *evictionWorker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.notify:
		}
		w.step(ctx, w.latest())
	}
}

// step takes at most one action for ev.
func (w *evictionWorker) step(ctx context.Context, ev evaluation) {
	if w.waiting != nil {
		gone := w.evictor.Gone(*w.waiting)
		waited := w.clock.Since(w.waitingSince)
		if !gone && waited < w.goneTimeout {
			return
		}
		if gone {
			w.logger.Info("evicted pod is gone", "pod", w.waiting.String(), "after", waited)
		} else {
			w.logger.Warn("evicted pod has not gone; moving on", "pod", w.waiting.String(), "waited", waited)
		}
		w.waiting = nil
		w.stepDone()
		return
	}
	if ev.seq <= w.needAfter {
		return
	}
	r, ok := mostUrgent(ev.results)
	if !ok {
		w.reclaimedFor, w.idleNoticeFor = "", ""
		return
	}
	res := r.Signal.Resource()
	if w.reclaimer != nil && (res == ResourceEphemeralStorage || res == ResourceInodes) && w.reclaimedFor != r.Signal {
		// Kubelet reclaims at node level before every pod eviction for disk, and
		// evicts only if a fresh observation still shows the threshold crossed.
		w.reclaimedFor = r.Signal
		freed, err := w.reclaimer.Reclaim(ctx, r.Signal)
		if err != nil {
			w.logger.Warn("node-level reclaim failed", "signal", r.Signal, "freed", freed, "err", err)
		} else {
			w.logger.Info("node-level reclaim done", "signal", r.Signal, "freed", formatAmount(r.Signal, freed))
		}
		if freed > 0 {
			w.metrics.reclaimed.WithLabelValues(string(r.Signal)).Add(float64(freed))
		}
		w.stepDone()
		return
	}
	w.reclaimedFor = ""
	pods, err := w.pods.List(ctx)
	if err != nil {
		w.logger.Warn("listing pods to evict failed", "signal", r.Signal, "err", err)
		return
	}
	candidates := Rank(pods, res)
	if len(candidates) == 0 {
		if w.idleNoticeFor != r.Signal {
			w.logger.Warn("threshold crossed but no pod may be evicted (none, or only critical pods)",
				"signal", r.Signal, "threshold", r.Threshold.String(), "pods", len(pods))
			w.idleNoticeFor = r.Signal
		}
		return
	}
	victim := candidates[0]
	msg := evictionMessage(r, victim)
	if err := w.evictor.Evict(ctx, victim, msg, evictionGracePeriod(r.Threshold, victim, w.maxPodGrace)); err != nil {
		w.logger.Warn("evicting pod failed; trying again on the next evaluation", "pod", victim.String(), "err", err)
		return
	}
	w.idleNoticeFor = ""
	w.metrics.evictions.WithLabelValues(string(r.Signal)).Inc()
	w.logger.Warn("evicted pod", "pod", victim.String(), "signal", r.Signal, "message", msg)
	w.waiting, w.waitingSince = &victim, w.clock.Now()
}

// stepDone makes the worker wait for an evaluation that starts after this moment and
// asks for one at once.
func (w *evictionWorker) stepDone() {
	w.needAfter = w.startedSeq()
	w.poke()
}

// mostUrgent is the first actionable threshold in eviction order (results are in
// signal order, hard before soft).
func mostUrgent(results []ThresholdState) (ThresholdState, bool) {
	for _, r := range results {
		if r.Actionable {
			return r, true
		}
	}
	return ThresholdState{}, false
}

// evictionMessage says why pod was evicted, in the words of kubelet's eviction
// message.
func evictionMessage(r ThresholdState, pod Pod) string {
	res := r.Signal.Resource()
	msg := fmt.Sprintf("The node was low on resource: %s. Threshold quantity: %s, available: %s.",
		res, formatAmount(r.Signal, r.Target), formatAmount(r.Signal, r.Sample.Available))
	use, req := pod.Usage.of(res), pod.Requests.of(res)
	switch res {
	case ResourceMemory, ResourceEphemeralStorage:
		msg += fmt.Sprintf(" Pod was using %s, request is %s.", formatBytes(use), formatBytes(req))
	case ResourceInodes:
		msg += fmt.Sprintf(" Pod was using %d inodes.", use)
	case ResourcePIDs:
		msg += fmt.Sprintf(" Pod was running %d processes.", use)
	}
	return msg
}
