package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// EventRecorder is the part of client-go's record.EventRecorder the controller uses. It
// is called with the controller's lock held, so it must not block (client-go's
// broadcasting recorder does not).
type EventRecorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// Config wires a Controller. Client, Nodes, Leases and Clock are required.
type Config struct {
	Client kubernetes.Interface
	Nodes  coreinformers.NodeInformer
	// Leases are looked up in kube-node-lease under the node's name.
	Leases coordinationinformers.LeaseInformer
	// Pods, when set, lets the controller mark the pods of a silent node not Ready, so
	// they leave Service endpoints; nil leaves pods alone.
	Pods  coreinformers.PodInformer
	Clock clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Recorder receives the RegisteredNode, RemovingNode and NodeNotReady events; nil
	// drops them.
	Recorder EventRecorder
	Options  Options
}

// Controller watches node heartbeats, marks silent nodes' conditions Unknown, keeps the
// node taints that mirror conditions, and taints unready nodes NoExecute at the rate
// their zone's disruption state allows.
type Controller struct {
	// taintWriteMu serializes read-modify-write of node taints (see writeTaints).
	taintWriteMu sync.Mutex

	client       kubernetes.Interface
	nodeLister   corelisters.NodeLister
	leaseLister  coordinationlisters.LeaseLister
	podIndexer   cache.Indexer // nil: pods are not marked
	cachesSynced []cache.InformerSynced
	clock        clock.WithTicker
	logger       *slog.Logger
	recorder     EventRecorder
	opts         Options
	metrics      *metrics

	// mu guards nodes, zones, allDisrupted and dirty. It is held for bookkeeping only,
	// never across an API call.
	mu    sync.Mutex
	nodes map[string]*nodeHealth
	// zones is the disruption state and NoExecute tainting queue of every zone that has
	// a node.
	zones map[string]*zoneInfo
	// allDisrupted: every zone with counted nodes is in FullDisruption, so no node keeps
	// or gets a NoExecute taint.
	allDisrupted bool
	// dirty are nodes whose object changed since Run last reconciled their taints.
	dirty map[string]bool

	// wake tells Run that a node appeared (its deadline may be the earliest) or that a
	// node changed (its taints need a look). Heartbeats only move deadlines later and
	// need no wakeup: a timer that fires early costs one sweep of the cache.
	wake chan struct{}
}

// New builds a controller over the given informers and registers its event handlers on
// them; the caller starts the informer factory.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Nodes == nil || cfg.Leases == nil || cfg.Clock == nil {
		return nil, errors.New("nodelifecycle: Config needs Client, Nodes, Leases and Clock; one of them is nil")
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
	c := &Controller{
		client:      cfg.Client,
		nodeLister:  cfg.Nodes.Lister(),
		leaseLister: cfg.Leases.Lister(),
		clock:       cfg.Clock,
		logger:      logger.With("controller", "nodelifecycle"),
		recorder:    recorder,
		opts:        cfg.Options,
		metrics:     m,
		nodes:       make(map[string]*nodeHealth),
		zones:       make(map[string]*zoneInfo),
		dirty:       make(map[string]bool),
		wake:        make(chan struct{}, 1),
	}
	nodeReg, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(obj) },
		UpdateFunc: func(_, obj any) { c.onNode(obj) },
		DeleteFunc: c.onNodeDelete,
	})
	if err != nil {
		return nil, fmt.Errorf("nodelifecycle: adding node event handler: %w", err)
	}
	leaseReg, err := cfg.Leases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onLease(obj) },
		UpdateFunc: func(_, obj any) { c.onLease(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("nodelifecycle: adding lease event handler: %w", err)
	}
	c.cachesSynced = []cache.InformerSynced{nodeReg.HasSynced, leaseReg.HasSynced}
	if cfg.Pods != nil {
		if err := addPodNodeIndex(cfg.Pods.Informer()); err != nil {
			return nil, err
		}
		c.podIndexer = cfg.Pods.Informer().GetIndexer()
		c.cachesSynced = append(c.cachesSynced, cfg.Pods.Informer().HasSynced)
	}
	return c, nil
}

// Run waits for the caches, then checks every node each MonitorPeriod and also at the
// earliest per-node deadline, so a silent node is marked when its grace runs out rather
// than up to a MonitorPeriod later. Between sweeps it taints queued nodes NoExecute as
// their zones' rate limiters allow, and reconciles the taints of nodes that changed. It
// returns nil when ctx is done, and must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "monitor_period", c.opts.MonitorPeriod, "grace_period", c.opts.GracePeriod,
		"startup_grace_period", c.opts.StartupGracePeriod, "eviction_rate", c.opts.EvictionRate,
		"secondary_eviction_rate", c.opts.SecondaryEvictionRate, "unhealthy_zone_threshold", c.opts.UnhealthyZoneThreshold,
		"large_cluster_size_threshold", c.opts.LargeClusterSizeThreshold)
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.cachesSynced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("nodelifecycle: node, lease and pod caches did not sync")
	}
	ticker := c.clock.NewTicker(c.opts.MonitorPeriod)
	defer ticker.Stop()

	// swept is when the last sweep began: every deadline up to it has been decided.
	swept := c.clock.Now()
	c.sweep(ctx)
	for {
		now := c.clock.Now()
		var next time.Time
		armed := false
		if d, ok := c.nextDeadline(); ok {
			switch {
			case d.After(now):
				next, armed = d, true
			case d.After(swept):
				// The deadline passed while the last sweep ran or just after it.
				swept = now
				c.sweep(ctx)
				continue
			default:
				// A sweep after the deadline left the node undecided (the cache
				// could not be listed); the ticker retries rather than a tight loop.
			}
		}
		if t, ok := c.nextTaintTime(now); ok {
			if !t.After(now) {
				// Every pass spends a token or empties a queue, so this ends.
				c.taintPass(ctx, nil)
				continue
			}
			if !armed || t.Before(next) {
				next, armed = t, true
			}
		}
		var timer clock.Timer
		var timerC <-chan time.Time
		if armed {
			timer = c.clock.NewTimer(next.Sub(now))
			timerC = timer.C()
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
		case <-timerC:
			// The top of the loop sees what is due.
		case <-c.wake:
			c.reconcileDirty(ctx)
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
// run out Unknown, forgets nodes that are gone, recomputes the zones' disruption states,
// reconciles every node's taints and marks the pods of silent nodes not Ready. The event
// handlers stamp heartbeats as they arrive; reading again here makes the sweep correct
// on its own.
func (c *Controller) sweep(ctx context.Context) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		c.logger.Error("listing nodes from the cache", "err", err)
		return
	}
	now := c.clock.Now()
	var silent []*v1.Node
	latest := make(map[string]*v1.Node, len(nodes))

	c.mu.Lock()
	for _, node := range nodes {
		latest[node.Name] = node
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
		if _, ok := latest[name]; !ok {
			c.forgetLocked(name)
		}
	}
	c.mu.Unlock()

	for i, written := range c.markAllUnknown(ctx, silent) {
		if written != nil {
			latest[silent[i].Name] = written
		}
	}
	// By name, so nodes that become due in the same sweep queue in a stable order.
	current := make([]*v1.Node, 0, len(nodes))
	for _, node := range nodes {
		current = append(current, latest[node.Name])
	}
	slices.SortFunc(current, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })

	c.mu.Lock()
	c.updateZonesLocked(current, c.clock.Now())
	c.mu.Unlock()
	for i, node := range current {
		current[i] = c.reconcileTaints(ctx, node)
		latest[node.Name] = current[i]
	}
	c.markPodsOfSilentNodes(ctx, current)
	// The cache has not seen this sweep's writes yet; the pass decides on them.
	c.taintPass(ctx, latest)
}

// statusWriteWorkers bounds how many status writes of one sweep are in flight at once.
// Nodes that fall silent together (a rack losing power, a partition) fall due in the
// same sweep; written one after another, the last of thousands would be marked a whole
// queue of round trips late. Marking Unknown is not rate limited (the NoExecute taints
// that evict are, per zone), so the only bound needed is one that keeps this
// controller's burst from crowding out everyone else's requests.
const statusWriteWorkers = 16

// markAllUnknown marks the silent nodes Unknown, statusWriteWorkers at a time, and
// returns each node as written (nil where nothing was written), in the order given.
func (c *Controller) markAllUnknown(ctx context.Context, silent []*v1.Node) []*v1.Node {
	written := make([]*v1.Node, len(silent))
	workqueue.ParallelizeUntil(ctx, statusWriteWorkers, len(silent), func(i int) {
		w, err := c.markUnknown(ctx, silent[i])
		if err != nil {
			c.logger.Error("setting node conditions to Unknown", "node", silent[i].Name, "err", err)
		}
		written[i] = w
	})
	return written
}

// markUnknown writes the Unknown conditions through the status subresource and returns
// the node as written (nil when nothing was written). node is the cached copy the sweep
// decided on. Before every attempt the decision is taken again, because a heartbeat may
// have arrived since; after a conflict the node is fetched again first, because the
// conflict may be the node agent coming back.
func (c *Controller) markUnknown(ctx context.Context, node *v1.Node) (*v1.Node, error) {
	refetch := false
	var result *v1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
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

		wasReady := readyStatus(node) == v1.ConditionTrue
		updated := node.DeepCopy()
		changed := markConditionsUnknown(&updated.Status, node.CreationTimestamp, metav1.NewTime(c.clock.Now()))
		if len(changed) == 0 {
			return nil
		}
		written, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		result = written
		c.metrics.statusUnknown.Inc()
		c.logger.Info("node stopped heartbeating; conditions set to Unknown",
			"node", node.Name, "conditions", changed, "silent_for", v.silent, "grace_period", v.grace)
		if wasReady {
			c.recorder.Event(written, v1.EventTypeNormal, eventNodeNotReady, fmt.Sprintf("Node %s status is now: %s", node.Name, eventNodeNotReady))
		}
		// Take the written object as a reading so the write itself is never mistaken
		// for a heartbeat; it keeps the node's heartbeat times, so it normally is not.
		c.reobserve(written)
		return nil
	})
	return result, err
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
	c.recorder.Event(node, v1.EventTypeNormal, eventRegisteredNode, fmt.Sprintf("Node %s event: Registered Node %s in Controller", node.Name, node.Name))
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
	delete(c.dirty, name)
	c.metrics.nodes.Set(float64(len(c.nodes)))
	c.logger.Debug("forgot deleted node", "node", name)
	// The object is gone; a reference by name is what the event needs.
	gone := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.recorder.Event(gone, v1.EventTypeNormal, eventRemovingNode, fmt.Sprintf("Node %s event: Removing Node %s from Controller", name, name))
}

func (c *Controller) onNode(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	c.observeNodeLocked(node, c.clock.Now())
	c.dirty[node.Name] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
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
