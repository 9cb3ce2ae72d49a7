package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Options are the scheduler's tunables.
type Options struct {
	// InitialBackoff and MaxBackoff bound the wait before an unschedulable pod is tried
	// again after a cluster change, doubling per failed attempt (kube-scheduler's
	// podInitialBackoffSeconds and podMaxBackoffSeconds); failed API writes use the same.
	InitialBackoff, MaxBackoff time.Duration
	// UnschedulableFlush is how long an unschedulable pod waits for a cluster change
	// before it is tried anyway (kube-scheduler's podMaxInUnschedulablePodsDuration).
	UnschedulableFlush time.Duration
}

// DefaultOptions are kube-scheduler's: 1 s doubling to 10 s, and 5 min.
func DefaultOptions() Options {
	return Options{InitialBackoff: time.Second, MaxBackoff: 10 * time.Second, UnschedulableFlush: 5 * time.Minute}
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	switch {
	case o.InitialBackoff <= 0:
		return fmt.Errorf("scheduler: option InitialBackoff: %v is not positive (default %v)", o.InitialBackoff, DefaultOptions().InitialBackoff)
	case o.MaxBackoff < o.InitialBackoff:
		return fmt.Errorf("scheduler: option MaxBackoff: %v is below InitialBackoff %v (default %v)", o.MaxBackoff, o.InitialBackoff, DefaultOptions().MaxBackoff)
	case o.UnschedulableFlush <= 0:
		return fmt.Errorf("scheduler: option UnschedulableFlush: %v is not positive (default %v)", o.UnschedulableFlush, DefaultOptions().UnschedulableFlush)
	}
	return nil
}

// EventRecorder is the part of client-go's record.EventRecorder the scheduler uses.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Config wires a Scheduler. Client, Pods, Nodes and Clock are required.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	Nodes  coreinformers.NodeInformer
	Clock  clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Recorder receives Scheduled and FailedScheduling events; nil drops them.
	Recorder EventRecorder
	Options  Options
}

// The event reasons and the condition reason, as kube-scheduler writes them.
const (
	eventScheduled       = "Scheduled"
	eventFailed          = "FailedScheduling"
	conditionUnscheduled = v1.PodReasonUnschedulable
)

// Scheduler binds pods without a node to the node that fits them best.
type Scheduler struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	clock    clock.WithTicker
	logger   *slog.Logger
	recorder EventRecorder
	opts     Options
	metrics  *metrics
	book     *usageBook
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]

	// mu guards the unschedulable pods: parked ones wait for a cluster change until
	// their retryAt; attempts counts failures in a row, for the backoff.
	mu       sync.Mutex
	parked   map[types.NamespacedName]time.Time
	attempts map[types.NamespacedName]int
}

// New builds a scheduler over the given informers and registers its event handlers on
// them; the caller starts the informers.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.Clock == nil {
		return nil, errors.New("scheduler: Config needs Client, Pods, Nodes and Clock; one of them is nil")
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	recorder := cfg.Recorder
	if recorder == nil {
		recorder = discardEvents{}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		client:   cfg.Client,
		pods:     cfg.Pods.Lister(),
		nodes:    cfg.Nodes.Lister(),
		clock:    cfg.Clock,
		logger:   logger.With("controller", "scheduler"),
		recorder: recorder,
		opts:     cfg.Options,
		metrics:  m,
		book:     newUsageBook(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](cfg.Options.InitialBackoff, cfg.Options.MaxBackoff),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "scheduler", Clock: cfg.Clock}),
		parked:   map[types.NamespacedName]time.Time{},
		attempts: map[types.NamespacedName]int{},
	}
	podReg, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(nil, obj, false) },
		UpdateFunc: func(old, obj any) { s.onPod(old, obj, false) },
		DeleteFunc: func(obj any) { s.onPod(nil, obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: adding pod event handler: %w", err)
	}
	nodeReg, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.wakeParked() },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*v1.Node); !ok || nodeChangeMatters(o, obj.(*v1.Node)) {
				s.wakeParked()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: adding node event handler: %w", err)
	}
	s.synced = []cache.InformerSynced{podReg.HasSynced, nodeReg.HasSynced}
	return s, nil
}

// Run waits for the caches, then schedules one pod at a time (so the free room it
// counts is never claimed twice) until ctx is done. It returns nil once its worker
// stopped, and must be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	s.logger.Info("starting")
	defer s.logger.Info("stopped")
	var worker sync.WaitGroup
	defer func() {
		s.queue.ShutDown()
		worker.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("scheduler: pod and node caches did not sync")
	}
	worker.Go(func() {
		for s.processNext(ctx) {
		}
	})
	<-ctx.Done()
	return nil
}

// needsScheduling: a live pod without a node that names this scheduler and has no
// scheduling gates left.
func needsScheduling(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == v1.DefaultSchedulerName) &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed && len(pod.Spec.SchedulingGates) == 0
}

func (s *Scheduler) onPod(old, obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	s.book.observe(pod, gone)
	oldPod, _ := old.(*v1.Pod)
	switch {
	case gone:
		if occupiesNode(pod) {
			s.wakeParked() // room freed
		}
	case oldPod != nil && occupiesNode(oldPod) && !occupiesNode(pod):
		s.wakeParked() // finished: room freed
	case needsScheduling(pod) && (oldPod == nil || oldPod.Generation != pod.Generation):
		// New, or its spec changed (tolerations added, gates removed). Status updates,
		// including this scheduler's own PodScheduled condition, do not count.
		s.queue.Add(keyOf(pod))
	}
}

// nodeChangeMatters: what the filters and the score read, not heartbeats.
func nodeChangeMatters(old, n *v1.Node) bool {
	if old.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) ||
		!labels.Equals(old.Labels, n.Labels) || !equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) {
		return true
	}
	for _, t := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if condition(old, t) != condition(n, t) {
			return true
		}
	}
	return false
}

// wakeParked queues every unschedulable pod again, each once its backoff has passed.
func (s *Scheduler) wakeParked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for key, at := range s.parked {
		delete(s.parked, key)
		s.queue.AddAfter(key, at.Sub(now))
	}
}

// park keeps an unschedulable pod until a cluster change after its backoff, or until
// UnschedulableFlush passes.
func (s *Scheduler) park(key types.NamespacedName) {
	s.mu.Lock()
	n := s.attempts[key] + 1
	s.attempts[key] = n
	s.parked[key] = s.clock.Now().Add(s.backoff(n))
	s.mu.Unlock()
	s.queue.AddAfter(key, s.opts.UnschedulableFlush)
}

// backoff is InitialBackoff doubled per earlier failure, at most MaxBackoff.
func (s *Scheduler) backoff(failures int) time.Duration {
	d := s.opts.InitialBackoff
	for i := 1; i < failures && d < s.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.opts.MaxBackoff)
}

// settled forgets a pod that no longer needs this scheduler.
func (s *Scheduler) settled(key types.NamespacedName) {
	s.mu.Lock()
	delete(s.parked, key)
	delete(s.attempts, key)
	s.mu.Unlock()
	s.queue.Forget(key)
}

// processNext schedules one pod; false means the queue is shut down.
func (s *Scheduler) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.scheduleOne(ctx, key); err != nil && ctx.Err() == nil {
		s.logger.Warn("retrying", "pod", key.String(), "err", err, "retries", s.queue.NumRequeues(key))
		s.queue.AddRateLimited(key)
	}
	s.mu.Lock()
	parked := len(s.parked)
	s.mu.Unlock()
	s.metrics.pending.WithLabelValues("unschedulable").Set(float64(parked))
	s.metrics.pending.WithLabelValues("active").Set(float64(s.queue.Len()))
	return true
}

// scheduleOne tries to place one pod. It returns an error only when an API write
// failed and the pod should be tried again with backoff.
func (s *Scheduler) scheduleOne(ctx context.Context, key types.NamespacedName) error {
	pod, err := s.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && !needsScheduling(pod)) {
		s.settled(key)
		return nil
	}
	if err != nil {
		return err
	}
	if s.book.isAssumed(key, pod.UID) {
		return nil // bound; the cache has not caught up
	}
	start := s.clock.Now()
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	candidates := make([]candidate, len(nodes))
	for i, n := range nodes {
		candidates[i] = candidate{node: n, usage: s.book.usage(n.Name)}
	}
	d := pickNode(pod, candidates)
	if d.node == "" {
		s.unschedulable(ctx, pod, d.message)
		s.metrics.observe("unschedulable", s.clock.Since(start))
		return nil
	}
	s.book.assume(pod, d.node)
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target: v1.ObjectReference{Kind: "Node", Name: d.node}}
	if err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		s.book.forget(pod)
		s.metrics.observe("error", s.clock.Since(start))
		if apierrors.IsNotFound(err) {
			s.settled(key) // deleted meanwhile
			return nil
		}
		s.recorder.Eventf(pod, v1.EventTypeWarning, eventFailed, "Binding rejected: %v", err)
		return fmt.Errorf("binding to %s: %w", d.node, err)
	}
	s.metrics.observe("scheduled", s.clock.Since(start))
	s.logger.Info("pod bound", "pod", key.String(), "node", d.node)
	s.recorder.Eventf(pod, v1.EventTypeNormal, eventScheduled, "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, d.node)
	s.settled(key)
	return nil
}

// unschedulable tells the pod's owner why, through a FailedScheduling event and the
// PodScheduled=False condition (written only when it changes), and parks the pod.
func (s *Scheduler) unschedulable(ctx context.Context, pod *v1.Pod, message string) {
	s.logger.Info("pod unschedulable", "pod", keyOf(pod).String(), "reason", message)
	s.recorder.Eventf(pod, v1.EventTypeWarning, eventFailed, "%s", message)
	s.park(keyOf(pod))
	if err := s.setUnschedulableCondition(ctx, pod, message); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		// The next attempt writes it again; the event has told the story.
		s.logger.Warn("writing the PodScheduled condition", "pod", keyOf(pod).String(), "err", err)
	}
}

func (s *Scheduler) setUnschedulableCondition(ctx context.Context, pod *v1.Pod, message string) error {
	want := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: conditionUnscheduled, Message: message}
	updated := pod.DeepCopy()
	found := false
	for i := range updated.Status.Conditions {
		c := &updated.Status.Conditions[i]
		if c.Type != v1.PodScheduled {
			continue
		}
		found = true
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return nil
		}
		if c.Status != want.Status {
			c.LastTransitionTime = metav1.NewTime(s.clock.Now())
		}
		c.Status, c.Reason, c.Message = want.Status, want.Reason, want.Message
	}
	if !found {
		want.LastTransitionTime = metav1.NewTime(s.clock.Now())
		updated.Status.Conditions = append(updated.Status.Conditions, want)
	}
	_, err := s.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, string, string, string, ...any) {}
