package podgc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Config wires a Controller. Client, Pods, Nodes and Clock are required.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	Nodes  coreinformers.NodeInformer
	Clock  clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger  *slog.Logger
	Options Options
}

// deleteParallelism bounds the deletions in flight, so thousands of terminated pods
// over the threshold go in parallel without flooding the API.
const deleteParallelism = 8

// Controller is the pod garbage collector.
type Controller struct {
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	clock      clock.WithTicker
	logger     *slog.Logger
	metrics    *metrics
	opts       Options

	// missing is owned by the goroutine running collect (Run's, or a test's).
	missing quarantine
}

// New builds a controller over the given informers; the caller starts them.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.Clock == nil {
		return nil, errors.New("podgc: Config needs Client, Pods, Nodes and Clock; one of them is nil")
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{
		client:     cfg.Client,
		podLister:  cfg.Pods.Lister(),
		nodeLister: cfg.Nodes.Lister(),
		// Getting the informers registers them with the factory, so they start.
		synced:  []cache.InformerSynced{cfg.Pods.Informer().HasSynced, cfg.Nodes.Informer().HasSynced},
		clock:   cfg.Clock,
		logger:  logger.With("controller", "podgc"),
		metrics: m,
		opts:    cfg.Options,
		missing: quarantine{since: make(map[string]time.Time)},
	}, nil
}

// Run waits for the caches, then applies every rule at once and every CheckPeriod
// until ctx is done, when it returns nil. It must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "terminated_pod_threshold", c.opts.TerminatedPodThreshold,
		"check_period", c.opts.CheckPeriod, "quarantine", c.opts.Quarantine)
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("podgc: pod and node caches did not sync")
	}
	ticker := c.clock.NewTicker(c.opts.CheckPeriod)
	defer ticker.Stop()
	for {
		c.collect(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// collect applies the rules once, in Kubernetes' order. A pod that several rules pick
// is deleted once.
func (c *Controller) collect(ctx context.Context) {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		c.logger.Error("listing pods from the cache", "err", err)
		return
	}
	done := make(map[types.UID]bool)
	c.forceDelete(ctx, reasonTerminated, terminatedOverThreshold(pods, c.opts.TerminatedPodThreshold), nil, done)
	c.forceDelete(ctx, reasonOutOfService, terminatingOnOutOfServiceNodes(pods, c.cachedNode), outOfServiceCondition(), done)
	c.forceDelete(ctx, reasonOrphaned, c.orphaned(ctx, pods), orphanedCondition(), done)
	c.forceDelete(ctx, reasonUnscheduled, unscheduledTerminating(pods), nil, done)
}

func (c *Controller) cachedNode(name string) (*v1.Node, bool) {
	n, err := c.nodeLister.Get(name)
	return n, err == nil
}

// orphaned is the pods bound to nodes that stayed missing from the cache through the
// quarantine and that a live read does not find either.
func (c *Controller) orphaned(ctx context.Context, pods []*v1.Pod) []*v1.Pod {
	now := c.clock.Now()
	due := c.missing.update(pods, func(name string) bool { _, ok := c.cachedNode(name); return ok }, now, c.opts.Quarantine)
	gone := make(map[string]bool)
	for _, name := range due {
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err == nil:
			c.logger.Info("node missing from the cache exists; quarantining its pods again", "node", name)
			c.missing.restart(name, now)
		default:
			// Stays quarantined: the next pass reads again.
			c.logger.Error("confirming that a node is gone", "node", name, "err", err)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return podsOn(pods, gone)
}

// forceDelete deletes pods in parallel (at most deleteParallelism at once) and waits
// for them all. Pods in done are skipped; the others are added.
func (c *Controller) forceDelete(ctx context.Context, reason string, pods []*v1.Pod, cond *v1.PodCondition, done map[types.UID]bool) {
	var todo []*v1.Pod
	for _, p := range pods {
		if !done[p.UID] {
			done[p.UID] = true
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return
	}
	c.logger.Info("force-deleting pods", "reason", reason, "count", len(todo))
	slots := make(chan struct{}, deleteParallelism)
	var wg sync.WaitGroup
	for _, pod := range todo {
		if ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c.metrics.deleting.WithLabelValues(pod.Namespace, reason).Inc()
			if err := c.markFailedAndDelete(ctx, pod, cond); err != nil {
				c.metrics.errors.WithLabelValues(pod.Namespace, reason).Inc()
				c.logger.Error("force-deleting pod", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "reason", reason, "err", err)
				return
			}
			c.logger.Info("pod force-deleted", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "reason", reason)
		})
	}
	wg.Wait()
}
