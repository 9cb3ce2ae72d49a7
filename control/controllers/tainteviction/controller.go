package tainteviction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// EventRecorder is the part of client-go's record.EventRecorder the controller uses. It
// is called with the controller's lock held, so it must not block (client-go's
// broadcasting recorder does not).
type EventRecorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// Config wires a Controller. Client, Pods, Nodes and Clock are required.
type Config struct {
	Client kubernetes.Interface
	Pods   coreinformers.PodInformer
	Nodes  coreinformers.NodeInformer
	Clock  clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Recorder receives the TaintManagerEviction events; nil drops them.
	Recorder EventRecorder
}

// The event reason, as the Kubernetes taint manager records it.
const eventReason = "TaintManagerEviction"

// podNodeIndex indexes the pod cache by spec.nodeName; the name is this package's own,
// so other controllers sharing the informer can add theirs.
const podNodeIndex = "tainteviction.spec.nodeName"

// retryDelays are the waits after failed deletions of one pod, the last repeating.
var retryDelays = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

type podKey = types.NamespacedName

// scheduled is one pod's pending deletion.
type scheduled struct {
	uid      types.UID
	node     string
	at       time.Time
	taint    v1.Taint
	failures int
	gen      uint64 // matches the live heap entry
}

// taintID names a taint on a node for the first-seen times of taints without timeAdded.
type taintID struct {
	key, value string
}

// Controller deletes pods from nodes whose NoExecute taints they do not tolerate.
type Controller struct {
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	podIndexer cache.Indexer
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	clock      clock.WithTicker
	logger     *slog.Logger
	recorder   EventRecorder
	metrics    *metrics

	// mu guards everything below. It is never held across an API call.
	mu        sync.Mutex
	schedule  map[podKey]*scheduled
	deadlines deadlineHeap
	gen       uint64
	// taintSeen is when each NoExecute taint without timeAdded was first seen, by node.
	taintSeen  map[string]map[taintID]time.Time
	dirtyPods  map[podKey]bool
	dirtyNodes map[string]bool

	// wake tells Run that pods or nodes changed.
	wake chan struct{}
}

// New builds a controller over the given informers and registers its event handlers
// and a pod index on them; the caller starts the informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.Clock == nil {
		return nil, errors.New("tainteviction: Config needs Client, Pods, Nodes and Clock; one of them is nil")
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
		client:     cfg.Client,
		podLister:  cfg.Pods.Lister(),
		podIndexer: cfg.Pods.Informer().GetIndexer(),
		nodeLister: cfg.Nodes.Lister(),
		clock:      cfg.Clock,
		logger:     logger.With("controller", "tainteviction"),
		recorder:   recorder,
		metrics:    m,
		schedule:   make(map[podKey]*scheduled),
		taintSeen:  make(map[string]map[taintID]time.Time),
		dirtyPods:  make(map[podKey]bool),
		dirtyNodes: make(map[string]bool),
		wake:       make(chan struct{}, 1),
	}
	err = cfg.Pods.Informer().AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("tainteviction: adding the pod index by node: %w", err)
	}
	podReg, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onPod,
		UpdateFunc: func(_, obj any) { c.onPod(obj) },
		DeleteFunc: c.onPod,
	})
	if err != nil {
		return nil, fmt.Errorf("tainteviction: adding pod event handler: %w", err)
	}
	nodeReg, err := cfg.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onNode,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := obj.(*v1.Node)
			// Status updates are frequent and never change what this controller
			// decides; only the NoExecute taints do.
			if ok1 && ok2 && slices.EqualFunc(noExecuteTaints(o), noExecuteTaints(n), sameTaint) {
				return
			}
			c.onNode(obj)
		},
		DeleteFunc: c.onNode,
	})
	if err != nil {
		return nil, fmt.Errorf("tainteviction: adding node event handler: %w", err)
	}
	c.synced = []cache.InformerSynced{podReg.HasSynced, nodeReg.HasSynced}
	return c, nil
}

func sameTaint(a, b v1.Taint) bool {
	return a.MatchTaint(&b) && a.Value == b.Value && a.TimeAdded.Equal(b.TimeAdded)
}

// Run waits for the caches, looks at every node once, then follows pod and node changes
// and deletes pods as their deadlines come. It returns nil when ctx is done, and must
// be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting")
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("tainteviction: pod and node caches did not sync")
	}
	// After a restart, pods on tainted nodes get their deadlines back from timeAdded.
	if err := c.markAllNodes(); err != nil {
		return err
	}
	for {
		c.processDirty()
		c.processDue(ctx)
		var timer clock.Timer
		var timerC <-chan time.Time
		if next, ok := c.nextDeadline(); ok {
			timer = c.clock.NewTimer(next.Sub(c.clock.Now()))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-timerC:
		case <-c.wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (c *Controller) markAllNodes() error {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("tainteviction: listing nodes from the cache: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		c.dirtyNodes[n.Name] = true
	}
	return nil
}

func (c *Controller) onPod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	c.dirtyPods[podKey{Namespace: pod.Namespace, Name: pod.Name}] = true
	c.mu.Unlock()
	c.poke()
}

func (c *Controller) onNode(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	c.dirtyNodes[node.Name] = true
	c.mu.Unlock()
	c.poke()
}

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// processDirty decides again for the pods that changed and for every pod of the nodes
// that changed. It reads only the caches.
func (c *Controller) processDirty() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.dirtyNodes {
		delete(c.dirtyNodes, name)
		c.forgetGoneTaintsLocked(name)
		objs, err := c.podIndexer.ByIndex(podNodeIndex, name)
		if err != nil {
			c.logger.Error("listing pods of node from the cache", "node", name, "err", err)
			continue
		}
		done := make(map[podKey]bool, len(objs))
		for _, obj := range objs {
			if pod, ok := obj.(*v1.Pod); ok {
				key := podKey{Namespace: pod.Namespace, Name: pod.Name}
				c.evaluateLocked(pod)
				done[key] = true
				delete(c.dirtyPods, key)
			}
		}
		// Pods scheduled for this node that the index no longer puts there.
		for key, s := range c.schedule {
			if s.node == name && !done[key] {
				c.dirtyPods[key] = true
			}
		}
	}
	for key := range c.dirtyPods {
		delete(c.dirtyPods, key)
		pod, err := c.podLister.Pods(key.Namespace).Get(key.Name)
		if err != nil {
			// Gone: nothing to delete, and nothing to tell.
			c.unscheduleLocked(key)
			continue
		}
		c.evaluateLocked(pod)
	}
}

// forgetGoneTaintsLocked drops first-seen times of taints the node no longer has.
func (c *Controller) forgetGoneTaintsLocked(nodeName string) {
	seen, ok := c.taintSeen[nodeName]
	if !ok {
		return
	}
	node, err := c.nodeLister.Get(nodeName)
	if err != nil {
		delete(c.taintSeen, nodeName)
		return
	}
	present := make(map[taintID]bool)
	for _, t := range noExecuteTaints(node) {
		present[taintID{t.Key, t.Value}] = true
	}
	for id := range seen {
		if !present[id] {
			delete(seen, id)
		}
	}
}

// decideLocked is the verdict for a pod from the caches. Pods that are not bound,
// already terminating, or on a node the cache does not have are never evicted here.
func (c *Controller) decideLocked(pod *v1.Pod) (verdict, string) {
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return verdict{}, ""
	}
	node, err := c.nodeLister.Get(pod.Spec.NodeName)
	if err != nil {
		return verdict{}, pod.Spec.NodeName
	}
	taints := noExecuteTaints(node)
	if len(taints) == 0 {
		return verdict{}, node.Name
	}
	return evictionDeadline(pod.Spec.Tolerations, taints, func(t v1.Taint) time.Time { return c.sinceLocked(node.Name, t) }), node.Name
}

// sinceLocked is when a taint was added: its timeAdded, else when it was first seen.
func (c *Controller) sinceLocked(nodeName string, t v1.Taint) time.Time {
	if t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	seen := c.taintSeen[nodeName]
	if seen == nil {
		seen = make(map[taintID]time.Time)
		c.taintSeen[nodeName] = seen
	}
	id := taintID{t.Key, t.Value}
	at, ok := seen[id]
	if !ok {
		at = c.clock.Now()
		seen[id] = at
	}
	return at
}

// evaluateLocked schedules, moves or cancels the pod's deletion.
func (c *Controller) evaluateLocked(pod *v1.Pod) {
	key := podKey{Namespace: pod.Namespace, Name: pod.Name}
	v, node := c.decideLocked(pod)
	if !v.evict {
		if pod.DeletionTimestamp != nil {
			c.unscheduleLocked(key) // going anyway: nothing to tell
			return
		}
		if c.unscheduleLocked(key) {
			c.logger.Info("pod deletion cancelled", "pod", key.String(), "node", node)
			c.recorder.Event(pod, v1.EventTypeNormal, eventReason, "Cancelling deletion of Pod "+key.String())
		}
		return
	}
	if s, ok := c.schedule[key]; ok && s.uid == pod.UID && s.at.Equal(v.at) {
		return
	}
	c.scheduleLocked(key, &scheduled{uid: pod.UID, node: node, at: v.at, taint: v.taint})
	c.logger.Debug("pod deletion scheduled", "pod", key.String(), "node", node, "taint", v.taint.Key, "at", v.at)
}

func (c *Controller) scheduleLocked(key podKey, s *scheduled) {
	c.gen++
	s.gen = c.gen
	c.schedule[key] = s
	c.deadlines.push(heapItem{at: s.at, key: key, gen: s.gen})
	c.metrics.scheduled.Set(float64(len(c.schedule)))
}

// unscheduleLocked drops the pod's pending deletion and reports whether it had one. The
// heap entry goes stale and is skipped when it comes up.
func (c *Controller) unscheduleLocked(key podKey) bool {
	if _, ok := c.schedule[key]; !ok {
		return false
	}
	delete(c.schedule, key)
	c.metrics.scheduled.Set(float64(len(c.schedule)))
	return true
}

// nextDeadline is the earliest pending deletion.
func (c *Controller) nextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.deadlines.Len() > 0 {
		top := c.deadlines.peek()
		if s, ok := c.schedule[top.key]; ok && s.gen == top.gen {
			return top.at, true
		}
		c.deadlines.pop()
	}
	return time.Time{}, false
}

// takeDueLocked removes and returns the deletions whose time has come.
func (c *Controller) takeDueLocked(now time.Time) map[podKey]*scheduled {
	due := make(map[podKey]*scheduled)
	for c.deadlines.Len() > 0 {
		top := c.deadlines.peek()
		s, ok := c.schedule[top.key]
		if !ok || s.gen != top.gen {
			c.deadlines.pop()
			continue
		}
		if top.at.After(now) {
			break
		}
		c.deadlines.pop()
		delete(c.schedule, top.key)
		due[top.key] = s
	}
	c.metrics.scheduled.Set(float64(len(c.schedule)))
	return due
}

type discardEvents struct{}

func (discardEvents) Event(runtime.Object, string, string, string) {}
