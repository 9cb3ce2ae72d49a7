package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
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

// Event reasons and the NetworkUnavailable condition's reasons.
const (
	// ReasonCIDRNotAvailable is kube-controller-manager's event reason for a Node that
	// could not get a CIDR because the range is exhausted.
	ReasonCIDRNotAvailable = "CIDRNotAvailable"
	// ReasonCIDRAssignmentFailed is the event reason for a Node whose CIDRs conflict
	// with another Node's or could not be written.
	ReasonCIDRAssignmentFailed = "CIDRAssignmentFailed"
	// ReasonCIDRAssigned is the reason NetworkUnavailable turns False with, once a Node
	// this controller marked got its CIDRs.
	ReasonCIDRAssigned = "CIDRAssigned"
)

// EventRecorder is the part of client-go's record.EventRecorder the controller uses.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, string, string, string, ...any) {}

// Config wires a Controller. Client, Nodes and Clock are required.
type Config struct {
	Client kubernetes.Interface
	Nodes  coreinformers.NodeInformer
	Clock  clock.WithTicker
	// Recorder records Events about Nodes; nil drops them.
	Recorder EventRecorder
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger  *slog.Logger
	Options Options
}

// holding is what a Node was given (or carries), keyed by its name in Controller.held.
type holding struct {
	uid   string
	cidrs []netip.Prefix
}

// Controller allocates node CIDRs. Everything below queue is owned by the single
// worker (Run's goroutine, or a test calling sync).
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	clock    clock.WithTicker
	recorder EventRecorder
	logger   *slog.Logger
	metrics  *metrics
	queue    workqueue.TypedRateLimitingInterface[string]

	sets []*cidrSet // in --cluster-cidr order, so podCIDRs[0] comes from the first
	held map[string]holding
}

// New builds a controller over the Node informer and registers its event handlers; the
// caller starts the informer.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Nodes == nil || cfg.Clock == nil {
		return nil, errors.New("nodeipam: Config needs Client, Nodes and Clock; one of them is nil")
	}
	if !cfg.Options.Enabled() {
		return nil, errors.New("nodeipam: no cluster CIDR (--cluster-cidr) to allocate from")
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
		client: cfg.Client, nodes: cfg.Nodes.Lister(), synced: cfg.Nodes.Informer().HasSynced,
		clock: cfg.Clock, recorder: recorder, logger: logger.With("controller", "nodeipam"), metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node_ipam", Clock: cfg.Clock}),
		held: map[string]holding{},
	}
	for _, p := range cfg.Options.ClusterCIDRs {
		size, _ := cfg.Options.maskSize(p)
		c.sets = append(c.sets, newCIDRSet(p, size))
		m.observe(c.sets[len(c.sets)-1])
	}
	_, err = cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := obj.(*v1.Node)
			if !ok1 || !ok2 || o.UID != n.UID || o.Spec.PodCIDR != n.Spec.PodCIDR ||
				!slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs) || len(n.Spec.PodCIDRs) == 0 {
				c.enqueue(obj)
			}
		},
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("nodeipam: adding event handler: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		c.logger.Error("node without a key", "err", err)
		return
	}
	c.queue.Add(key)
}

// Run waits for the Node cache, rebuilds the occupied set from every Node, then
// allocates until ctx is done, when it returns nil. It must be called once.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	cidrs := make([]string, len(c.sets))
	for i, s := range c.sets {
		cidrs[i] = fmt.Sprintf("%s (/%d)", s.cluster, s.maskSize)
	}
	c.logger.Info("starting", "cluster_cidrs", strings.Join(cidrs, ", "))
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("nodeipam: node cache did not sync")
	}
	if err := c.rebuild(); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.processNext(ctx) {
	}
	return nil
}

// rebuild marks every CIDR a cached Node carries as occupied, before anything is
// allocated, and queues every Node.
func (c *Controller) rebuild() error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("nodeipam: listing nodes from the cache: %w", err)
	}
	// Oldest first, so that of two Nodes carrying one CIDR the older keeps it.
	slices.SortFunc(nodes, func(a, b *v1.Node) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, n := range nodes {
		c.adopt(n)
		c.queue.Add(n.Name)
	}
	c.logger.Info("occupied node CIDRs rebuilt", "nodes", len(nodes), "nodes_with_cidrs", len(c.held))
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		c.logger.Error("allocating node CIDRs; will retry", "node", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// nodeCIDRs is what n carries: spec.podCIDRs, or spec.podCIDR alone when an older
// writer set only that. Unparsable entries are skipped (the registry refuses them).
func nodeCIDRs(n *v1.Node) []netip.Prefix {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// setFor is the set p falls in, nil when it is outside every cluster CIDR.
func (c *Controller) setFor(p netip.Prefix) *cidrSet {
	for _, s := range c.sets {
		if s.cluster.Contains(p.Addr()) {
			return s
		}
	}
	return nil
}

// inRange is the part of cidrs inside the cluster CIDRs.
func (c *Controller) inRange(cidrs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range cidrs {
		if c.setFor(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

// adopt records the CIDRs n carries inside the cluster CIDRs as its own. A CIDR held
// by another Node is reported and not taken over.
func (c *Controller) adopt(n *v1.Node) {
	cidrs := nodeCIDRs(n)
	if len(cidrs) == 0 {
		return
	}
	h := holder{name: n.Name, uid: string(n.UID)}
	var mine []netip.Prefix
	for _, p := range cidrs {
		s := c.setFor(p)
		if s == nil {
			c.logger.Debug("node CIDR outside every cluster CIDR left alone", "node", n.Name, "cidr", p)
			continue
		}
		if err := s.occupy(p, h); err != nil {
			c.logger.Error("node carries a CIDR it cannot have", "node", n.Name, "cidr", p, "err", err)
			c.recorder.Eventf(n, v1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Node %s carries pod CIDR %s: %v", n.Name, p, err)
			continue
		}
		c.metrics.observe(s)
		mine = append(mine, p)
	}
	if len(mine) > 0 {
		c.held[n.Name] = holding{uid: string(n.UID), cidrs: mine}
	}
}

// release frees what the Node named name holds, and queues the Nodes still waiting
// for CIDRs, since one may now fit.
func (c *Controller) release(name string) {
	h, ok := c.held[name]
	if !ok {
		return
	}
	delete(c.held, name)
	for _, p := range h.cidrs {
		if s := c.setFor(p); s != nil && s.release(p, holder{name: name, uid: h.uid}) {
			c.metrics.releases.WithLabelValues(s.cluster.String()).Inc()
			c.metrics.observe(s)
			c.logger.Info("node CIDR released", "node", name, "cidr", p)
		}
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range nodes {
		if len(nodeCIDRs(n)) == 0 {
			c.queue.Add(n.Name)
		}
	}
}

// sync brings the Node named name to having its CIDRs, or releases them when it is
// gone. It is idempotent.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.release(name)
		return nil
	}
	if err != nil {
		return err
	}
	if h, ok := c.held[name]; ok && h.uid != string(node.UID) {
		// A Node of the same name replaced the one that held these.
		c.release(name)
	}
	if carried := nodeCIDRs(node); len(carried) > 0 {
		// What the Node carries is the record: CIDRs held for a write that never
		// landed (someone else set others meanwhile) go back.
		if h, ok := c.held[name]; !ok || !slices.Equal(h.cidrs, c.inRange(carried)) {
			c.release(name)
			c.adopt(node)
		}
		return c.markAvailable(ctx, node)
	}
	cidrs, err := c.allocate(node)
	if errors.Is(err, errFull) {
		c.logger.Warn("no node CIDR available", "node", name, "err", err)
		c.recorder.Eventf(node, v1.EventTypeNormal, ReasonCIDRNotAvailable, "Node %s status is now: %s (%v)", name, ReasonCIDRNotAvailable, err)
		// Retried when a CIDR is released, not before: nothing else can free one.
		return c.markUnavailable(ctx, node, err)
	}
	if err != nil {
		return err
	}
	updated := node.DeepCopy()
	updated.Spec.PodCIDR = cidrs[0].String()
	updated.Spec.PodCIDRs = nil
	for _, p := range cidrs {
		updated.Spec.PodCIDRs = append(updated.Spec.PodCIDRs, p.String())
	}
	written, err := c.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.release(name)
		return nil
	case err != nil:
		// The CIDRs stay held for this Node, so the retry writes the same ones.
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Node %s: writing pod CIDRs %s: %v", name, strings.Join(updated.Spec.PodCIDRs, ","), err)
		return fmt.Errorf("writing pod CIDRs %s: %w", strings.Join(updated.Spec.PodCIDRs, ","), err)
	}
	c.logger.Info("node CIDRs assigned", "node", name, "pod_cidrs", strings.Join(updated.Spec.PodCIDRs, ","))
	return c.markAvailable(ctx, written)
}

// allocate returns the CIDRs node is to get, one per cluster CIDR: those it already
// holds from an earlier attempt, or new ones. Nothing stays held when one family is
// exhausted.
func (c *Controller) allocate(node *v1.Node) ([]netip.Prefix, error) {
	if h, ok := c.held[node.Name]; ok && len(h.cidrs) == len(c.sets) {
		return h.cidrs, nil
	}
	c.release(node.Name)
	h := holder{name: node.Name, uid: string(node.UID)}
	var got []netip.Prefix
	for _, s := range c.sets {
		p, err := s.allocate(h)
		if err != nil {
			for i, q := range got {
				c.sets[i].release(q, h)
				c.metrics.observe(c.sets[i])
			}
			return nil, err
		}
		c.metrics.allocations.WithLabelValues(s.cluster.String()).Inc()
		c.metrics.observe(s)
		got = append(got, p)
	}
	c.held[node.Name] = holding{uid: h.uid, cidrs: got}
	return got, nil
}

func networkCondition(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// markUnavailable sets NetworkUnavailable=True (reason CIDRNotAvailable) unless it is
// True already.
func (c *Controller) markUnavailable(ctx context.Context, n *v1.Node, cause error) error {
	if cur := networkCondition(n); cur != nil && cur.Status == v1.ConditionTrue {
		return nil
	}
	return c.patchCondition(ctx, n.Name, v1.ConditionTrue, ReasonCIDRNotAvailable, "no pod CIDR available: "+cause.Error())
}

// markAvailable turns the condition this controller set back to False; a
// NetworkUnavailable set by anyone else (a network plugin) is not this controller's.
func (c *Controller) markAvailable(ctx context.Context, n *v1.Node) error {
	cur := networkCondition(n)
	if cur == nil || cur.Status != v1.ConditionTrue || cur.Reason != ReasonCIDRNotAvailable {
		return nil
	}
	return c.patchCondition(ctx, n.Name, v1.ConditionFalse, ReasonCIDRAssigned, "the node has pod CIDRs "+strings.Join(n.Spec.PodCIDRs, ","))
}

func (c *Controller) patchCondition(ctx context.Context, name string, status v1.ConditionStatus, reason, message string) error {
	now := metav1.NewTime(c.clock.Now().Truncate(time.Second))
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{{
		Type: v1.NodeNetworkUnavailable, Status: status, Reason: reason, Message: message,
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting condition %s=%s: %w", v1.NodeNetworkUnavailable, status, err)
	}
	return nil
}
