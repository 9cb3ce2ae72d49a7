package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
)

// Controller watches node heartbeats and marks silent nodes' conditions Unknown.
type Controller struct {
	client       kubernetes.Interface
	nodeLister   corelisters.NodeLister
	leaseLister  coordinationlisters.LeaseLister
	cachesSynced []cache.InformerSynced
	clock        clock.WithTicker
	logger       *slog.Logger
	opts         Options
	metrics      *metrics

	// mu guards nodes. It is held for bookkeeping only, never across an API call.
	mu    sync.Mutex
	nodes map[string]*nodeHealth

	// newNode tells Run that a node appeared between sweeps, so its deadline may be the
	// earliest. Heartbeats only move deadlines later and need no wakeup: a timer that
	// fires early costs one sweep of the cache.
	newNode chan struct{}
}

// New builds a controller over the given informers and registers its event handlers on
// them; the caller starts the informer factory. Leases are looked up in the
// kube-node-lease namespace under the node's name. reg receives the metrics (nil: not
// registered); a nil logger discards logs.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, leases coordinationinformers.LeaseInformer, clk clock.WithTicker, reg prometheus.Registerer, logger *slog.Logger, opts Options) (*Controller, error) {
	if client == nil || nodes == nil || leases == nil || clk == nil {
		return nil, errors.New("nodelifecycle: New needs a client, a node informer, a lease informer and a clock; one of them is nil")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client:      client,
		nodeLister:  nodes.Lister(),
		leaseLister: leases.Lister(),
		clock:       clk,
		logger:      logger.With("controller", "nodelifecycle"),
		opts:        opts,
		metrics:     m,
		nodes:       make(map[string]*nodeHealth),
		newNode:     make(chan struct{}, 1),
	}
	nodeReg, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(obj) },
		UpdateFunc: func(_, obj any) { c.onNode(obj) },
		DeleteFunc: c.onNodeDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("nodelifecycle: adding node event handler: %w", err)
	}
	leaseReg, err := leases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onLease(obj) },
		UpdateFunc: func(_, obj any) { c.onLease(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("nodelifecycle: adding lease event handler: %w", err)
	}
	c.cachesSynced = []cache.InformerSynced{nodeReg.HasSynced, leaseReg.HasSynced}
	return c, nil
}

// Run waits for the node and lease caches, then checks every node each MonitorPeriod
// and also at the earliest per-node deadline, so a silent node is marked when its grace
// runs out rather than up to a MonitorPeriod later. It returns nil when ctx is done,
// and must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "monitor_period", c.opts.MonitorPeriod, "grace_period", c.opts.GracePeriod, "startup_grace_period", c.opts.StartupGracePeriod)
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.cachesSynced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("nodelifecycle: node and lease caches did not sync")
	}
	ticker := c.clock.NewTicker(c.opts.MonitorPeriod)
	defer ticker.Stop()

	// swept is when the last sweep began: every deadline up to it has been decided.
	swept := c.clock.Now()
	c.sweep(ctx)
	for {
		var timer clock.Timer
		var deadlineC <-chan time.Time
		if next, ok := c.nextDeadline(); ok {
			now := c.clock.Now()
			switch {
			case next.After(now):
				timer = c.clock.NewTimer(next.Sub(now))
				deadlineC = timer.C()
			case next.After(swept):
				// The deadline passed while the last sweep ran or just after it.
				swept = now
				c.sweep(ctx)
				continue
			default:
				// A sweep after the deadline left the node undecided (the cache
				// could not be listed); the ticker retries rather than a tight loop.
			}
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-ticker.C():
			swept = c.clock.Now()
			c.sweep(ctx)
		case <-deadlineC:
			swept = c.clock.Now()
			c.sweep(ctx)
		case <-c.newNode:
			// Only the deadline needs recomputing.
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// nextDeadline is the earliest deadline of the nodes not yet decided Unknown.
func (c *Controller) nextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return earliestDeadline(c.nodes, c.opts)
}

// sweep reads every node and its Lease from the caches, marks the nodes whose grace has
// run out Unknown, and forgets nodes that are gone. The event handlers stamp heartbeats
// as they arrive; reading again here makes the sweep correct on its own.
func (c *Controller) sweep(ctx context.Context) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		c.logger.Error("listing nodes from the cache", "err", err)
		return
	}
	now := c.clock.Now()
	var silent []*v1.Node

	c.mu.Lock()
	present := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		present[node.Name] = true
		h, _ := c.observeNodeLocked(node, now)
		c.noteLocked(node.Name, h.observeLease(readLeaseRenew(c.cachedLease(node.Name)), now))
		v := decide(h, now, c.opts)
		if v.healthy {
			continue
		}
		if !h.unknown {
			h.unknown = true
			c.logger.Debug("node silent past its grace period", "node", node.Name, "silent_for", v.silent, "grace_period", v.grace)
		}
		// Decided by what the node object says, not by h.unknown, so conditions someone
		// else set back without a heartbeat are corrected at the next sweep.
		if !conditionsAllUnknown(&node.Status) {
			silent = append(silent, node)
		}
	}
	for name := range c.nodes {
		if !present[name] {
			c.forgetLocked(name)
		}
	}
	c.mu.Unlock()

	for _, node := range silent {
		if err := c.markUnknown(ctx, node); err != nil {
			c.logger.Error("setting node conditions to Unknown", "node", node.Name, "err", err)
		}
	}
}

// markUnknown writes the Unknown conditions through the status subresource. node is the
// cached copy the sweep decided on. Before every attempt the decision is taken again,
// because a heartbeat may have arrived since; after a conflict the node is fetched
// again first, because the conflict may be the node agent coming back.
func (c *Controller) markUnknown(ctx context.Context, node *v1.Node) error {
	refetch := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refetch {
			fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				c.forget(node.Name)
				return nil
			}
			if err != nil {
				return fmt.Errorf("getting node %q after a conflict: %w", node.Name, err)
			}
			node = fresh
		}
		refetch = true
		v, healthy := c.reobserve(node)
		if healthy {
			return nil
		}

		updated := node.DeepCopy()
		changed := markConditionsUnknown(&updated.Status, node.CreationTimestamp, metav1.NewTime(c.clock.Now()))
		if len(changed) == 0 {
			return nil
		}
		written, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		c.metrics.statusUnknown.Inc()
		c.logger.Info("node stopped heartbeating; conditions set to Unknown",
			"node", node.Name, "conditions", changed, "silent_for", v.silent, "grace_period", v.grace)
		// Take the written object as a reading so the write itself is never mistaken
		// for a heartbeat; it keeps the node's heartbeat times, so it normally is not.
		c.reobserve(written)
		return nil
	})
}

// reobserve takes a fresh reading of node and decides again.
func (c *Controller) reobserve(node *v1.Node) (verdict, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	h, _ := c.observeNodeLocked(node, now)
	v := decide(h, now, c.opts)
	return v, v.healthy
}

// observeNodeLocked reads node into its record, creating the record (with the cached
// Lease as baseline) on first sight. Callers hold c.mu.
func (c *Controller) observeNodeLocked(node *v1.Node, now time.Time) (h *nodeHealth, created bool) {
	ready := readReady(node)
	if h, ok := c.nodes[node.Name]; ok {
		c.noteLocked(node.Name, h.observeReady(ready, now))
		return h, false
	}
	h = newNodeHealth(ready, readLeaseRenew(c.cachedLease(node.Name)), now)
	c.nodes[node.Name] = h
	c.metrics.nodes.Set(float64(len(c.nodes)))
	c.logger.Debug("tracking node", "node", node.Name, "grace_period", h.gracePeriod(c.opts))
	return h, true
}

// noteLocked logs a node coming back. Callers hold c.mu.
func (c *Controller) noteLocked(name string, o observation) {
	if o.recovered {
		c.logger.Info("node heartbeat resumed", "node", name)
	}
}

func (c *Controller) cachedLease(name string) *coordinationv1.Lease {
	lease, err := c.leaseLister.Leases(v1.NamespaceNodeLease).Get(name)
	if err != nil {
		// Not found is the common case (no Lease yet); the cache returns no other error.
		return nil
	}
	return lease
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(name)
}

func (c *Controller) forgetLocked(name string) {
	if _, ok := c.nodes[name]; !ok {
		return
	}
	delete(c.nodes, name)
	c.metrics.nodes.Set(float64(len(c.nodes)))
	c.logger.Debug("forgot deleted node", "node", name)
}

func (c *Controller) onNode(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	_, created := c.observeNodeLocked(node, c.clock.Now())
	c.mu.Unlock()
	if created {
		select {
		case c.newNode <- struct{}{}:
		default:
		}
	}
}

func (c *Controller) onNodeDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if node, ok := obj.(*v1.Node); ok {
		c.forget(node.Name)
	}
}

// onLease stamps a renewal as soon as it arrives, so the deadline is measured from the
// renewal and not from the next sweep. Leases of nodes not yet seen are read as the
// baseline when the node appears.
func (c *Controller) onLease(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || lease.Namespace != v1.NamespaceNodeLease {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.nodes[lease.Name]; ok {
		c.noteLocked(lease.Name, h.observeLease(readLeaseRenew(lease), now))
	}
}
