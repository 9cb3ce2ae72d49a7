package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Options are the controller's tunables.
type Options struct {
	// Workers is how many Services are synced at once (kube-controller-manager's
	// --concurrent-service-endpoint-syncs).
	Workers int
	// MaxEndpointsPerSlice is kube-controller-manager's --max-endpoints-per-slice.
	MaxEndpointsPerSlice int
	// MaxRetries is how often a failing Service is retried, with the queue's
	// exponential backoff, before it waits for its next change.
	MaxRetries int
}

// DefaultOptions are kube-controller-manager's defaults: 5 workers, 100 endpoints per
// slice, 15 retries.
func DefaultOptions() Options {
	return Options{Workers: 5, MaxEndpointsPerSlice: 100, MaxRetries: 15}
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	switch {
	case o.Workers < 1:
		return fmt.Errorf("endpointslice: option Workers: %d is not at least 1 (default %d)", o.Workers, DefaultOptions().Workers)
	case o.MaxEndpointsPerSlice < 1 || o.MaxEndpointsPerSlice > 1000:
		return fmt.Errorf("endpointslice: option MaxEndpointsPerSlice: %d is not between 1 and 1000 (default %d)", o.MaxEndpointsPerSlice, DefaultOptions().MaxEndpointsPerSlice)
	case o.MaxRetries < 0:
		return fmt.Errorf("endpointslice: option MaxRetries: %d is negative (default %d)", o.MaxRetries, DefaultOptions().MaxRetries)
	}
	return nil
}

// EventRecorder is the part of client-go's record.EventRecorder the controller uses.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Config wires a Controller. Client, the four informers and Clock are required.
type Config struct {
	Client   kubernetes.Interface
	Services coreinformers.ServiceInformer
	Pods     coreinformers.PodInformer
	Nodes    coreinformers.NodeInformer
	Slices   discoveryinformers.EndpointSliceInformer
	Clock    clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Recorder receives FailedToUpdateEndpointSlices events; nil drops them.
	Recorder EventRecorder
	Options  Options
}

// The event reason, as kube-controller-manager records it.
const reasonFailedToUpdate = "FailedToUpdateEndpointSlices"

var (
	// errStale retries a sync whose cache has not seen this controller's last writes.
	errStale = errors.New("the EndpointSlice cache has not seen this controller's last writes yet")
	// errUnknownNodes retries a sync that left out pods whose node the cache lacks.
	errUnknownNodes = errors.New("pods on nodes the cache does not know were left out")
)

// Controller keeps the EndpointSlices of Services with selectors.
type Controller struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	clock    clock.WithTicker
	logger   *slog.Logger
	recorder EventRecorder
	opts     Options
	metrics  *metrics
	tracker  *writeTracker
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]
}

// New builds a controller over the given informers and registers its event handlers on
// them; the caller starts the informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Services == nil || cfg.Pods == nil || cfg.Nodes == nil || cfg.Slices == nil || cfg.Clock == nil {
		return nil, errors.New("endpointslice: Config needs Client, Services, Pods, Nodes, Slices and Clock; one of them is nil")
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
		client:   cfg.Client,
		services: cfg.Services.Lister(),
		pods:     cfg.Pods.Lister(),
		nodes:    cfg.Nodes.Lister(),
		slices:   cfg.Slices.Lister(),
		clock:    cfg.Clock,
		logger:   logger.With("controller", "endpointslice"),
		recorder: recorder,
		opts:     cfg.Options,
		metrics:  m,
		tracker:  newWriteTracker(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "endpoint_slice", Clock: cfg.Clock}),
	}
	var regs []cache.ResourceEventHandlerRegistration
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return fmt.Errorf("endpointslice: adding event handler: %w", err)
		}
		regs = append(regs, reg)
		return nil
	}
	err = errors.Join(
		add(cfg.Services.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.onService,
			UpdateFunc: func(_, obj any) { c.onService(obj) },
			DeleteFunc: c.onService,
		}),
		// Pods and nodes of the first list need not queue anything: every Service is
		// queued by its own first add, and no worker starts before all caches synced.
		// That saves a selector match per pod and Service at start.
		add(cfg.Pods.Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					c.onPod(nil, obj)
				}
			},
			UpdateFunc: func(old, obj any) {
				if podChanged(old, obj) {
					c.onPod(old, obj)
				}
			},
			DeleteFunc: func(obj any) { c.onPod(nil, obj) },
		}),
		add(cfg.Nodes.Informer(), cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					c.enqueueAllServices()
				}
			},
			UpdateFunc: func(old, obj any) {
				o, ok1 := old.(*v1.Node)
				n, ok2 := obj.(*v1.Node)
				// Only a node's zone reaches the slices.
				if ok1 && ok2 && o.Labels[v1.LabelTopologyZone] != n.Labels[v1.LabelTopologyZone] {
					c.enqueueAllServices()
				}
			},
			DeleteFunc: func(any) { c.enqueueAllServices() },
		}),
		add(cfg.Slices.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onSlice(obj, false) },
			UpdateFunc: func(_, obj any) { c.onSlice(obj, false) },
			DeleteFunc: func(obj any) { c.onSlice(obj, true) },
		}),
	)
	if err != nil {
		return nil, err
	}
	for _, r := range regs {
		c.synced = append(c.synced, r.HasSynced)
	}
	return c, nil
}

// Run waits for the caches, then syncs Services with Options.Workers workers until ctx
// is done. It returns nil once its workers stopped, and must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "workers", c.opts.Workers, "max_endpoints_per_slice", c.opts.MaxEndpointsPerSlice)
	defer c.logger.Info("stopped")
	var workers sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		workers.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("endpointslice: caches did not sync")
	}
	for range c.opts.Workers {
		workers.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) onService(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if svc, ok := obj.(*v1.Service); ok {
		c.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	}
}

// onPod enqueues the Services whose selectors match the pod's labels, before and after
// the change.
func (c *Controller) onPod(old, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	svcs, err := c.services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		c.logger.Error("listing services from the cache", "namespace", pod.Namespace, "err", err)
		return
	}
	oldPod, _ := old.(*v1.Pod)
	for _, svc := range svcs {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
		if sel.Matches(labels.Set(pod.Labels)) || (oldPod != nil && sel.Matches(labels.Set(oldPod.Labels))) {
			c.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
		}
	}
}

// podChanged reports whether an update changed anything an endpoint is made of.
func podChanged(old, obj any) bool {
	o, ok1 := old.(*v1.Pod)
	n, ok2 := obj.(*v1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	if o.ResourceVersion == n.ResourceVersion {
		return false // a resync
	}
	return !labels.Equals(o.Labels, n.Labels) || o.Spec.NodeName != n.Spec.NodeName ||
		o.Status.PodIP != n.Status.PodIP || !podIPsEqual(o.Status.PodIPs, n.Status.PodIPs) ||
		podReady(o) != podReady(n) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Status.Phase != n.Status.Phase || o.Spec.Hostname != n.Spec.Hostname || o.Spec.Subdomain != n.Spec.Subdomain
}

func podIPsEqual(a, b []v1.PodIP) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IP != b[i].IP {
			return false
		}
	}
	return true
}

func (c *Controller) enqueueAllServices() {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		c.logger.Error("listing services from the cache", "err", err)
		return
	}
	for _, svc := range svcs {
		if len(svc.Spec.Selector) > 0 {
			c.queue.Add(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
		}
	}
}

// onSlice enqueues the Service of a slice this controller manages, so a slice someone
// else changed or deleted is put right.
func (c *Controller) onSlice(obj any, gone bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
	if gone {
		c.tracker.sliceGone(key, s.UID)
	}
	c.queue.Add(key)
}

// processNext syncs one Service; false means the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	err := c.sync(ctx, key)
	switch {
	case err == nil:
		c.metrics.syncs.WithLabelValues("success").Inc()
		c.queue.Forget(key)
	case ctx.Err() != nil:
	case errors.Is(err, errStale):
		c.metrics.syncs.WithLabelValues("stale").Inc()
		c.retry(key, err)
	default:
		c.metrics.syncs.WithLabelValues("error").Inc()
		c.retry(key, err)
	}
	return true
}

func (c *Controller) retry(key types.NamespacedName, err error) {
	n := c.queue.NumRequeues(key)
	if n >= c.opts.MaxRetries {
		c.logger.Warn("giving up until the Service or its pods change", "service", key.String(), "err", err, "retries", n)
		c.queue.Forget(key)
		// A write the cache never shows (its slice deleted before this controller
		// recorded it) must not block the Service for good.
		c.tracker.forget(key)
		return
	}
	c.logger.Debug("retrying", "service", key.String(), "err", err, "retries", n)
	c.queue.AddRateLimited(key)
}

// sync makes the managed slices of one Service match its pods. It reads only the caches
// and writes only what differs.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	svc, err := c.services.Services(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	existing, err := c.slices.EndpointSlices(key.Namespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: key.Name, discoveryv1.LabelManagedBy: ManagedBy}))
	if err != nil {
		return err
	}
	if svc == nil || len(svc.Spec.Selector) == 0 || svc.Spec.Type == v1.ServiceTypeExternalName {
		// Gone (the garbage collector would remove the slices too), or no longer
		// selecting pods: this controller's slices go; user-managed ones stay.
		err := c.apply(ctx, key, svc, slicePlan{deletes: existing})
		if err == nil {
			c.tracker.forget(key)
			c.metrics.setService(key, serviceCounts{})
		}
		return err
	}
	if svc.DeletionTimestamp != nil {
		return nil // the garbage collector removes the slices with it
	}
	if c.tracker.stale(key, existing) {
		return errStale
	}
	pods, err := c.pods.Pods(key.Namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	want := desiredEndpoints(svc, pods, c.zoneOf)
	plan := planSlices(svc, existing, want, c.opts.MaxEndpointsPerSlice)
	if err := c.apply(ctx, key, svc, plan); err != nil {
		if apierrors.IsConflict(err) {
			return err // someone else wrote a slice: the retry starts from what they wrote
		}
		c.recorder.Eventf(svc, v1.EventTypeWarning, reasonFailedToUpdate, "Error updating Endpoint Slices for Service %s: %v", key, err)
		return err
	}
	total := want.endpointCount()
	c.metrics.setService(key, serviceCounts{endpoints: total, slices: len(existing) + len(plan.creates) - len(plan.deletes),
		desiredSlices: max(1, (total+c.opts.MaxEndpointsPerSlice-1)/c.opts.MaxEndpointsPerSlice)})
	if want.unknownNodes > 0 {
		return fmt.Errorf("service %s: %d %w", key, want.unknownNodes, errUnknownNodes)
	}
	return nil
}

func (c *Controller) zoneOf(name string) (string, bool) {
	node, err := c.nodes.Get(name)
	if err != nil {
		return "", false
	}
	return node.Labels[v1.LabelTopologyZone], true
}

// apply writes a plan: creates, then updates, then deletes, so an endpoint moving
// between slices is never missing from all of them. Every write is recorded for the
// stale-cache check.
func (c *Controller) apply(ctx context.Context, key types.NamespacedName, svc *v1.Service, plan slicePlan) error {
	if plan.empty() {
		return nil
	}
	slicesAPI := c.client.DiscoveryV1().EndpointSlices(key.Namespace)
	var added, removed int
	for _, s := range plan.creates {
		created, err := slicesAPI.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating an EndpointSlice: %w", err)
		}
		c.tracker.record(key, created.UID, created.Generation)
		c.metrics.changes.WithLabelValues("create").Inc()
		added += len(s.Endpoints)
	}
	for _, s := range plan.updates {
		before, _ := c.slices.EndpointSlices(key.Namespace).Get(s.Name)
		updated, err := slicesAPI.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating EndpointSlice %s: %w", s.Name, err)
		}
		c.tracker.record(key, updated.UID, updated.Generation)
		c.metrics.changes.WithLabelValues("update").Inc()
		a, r := endpointDiff(before, s)
		added, removed = added+a, removed+r
	}
	for _, s := range plan.deletes {
		uid := s.UID
		err := slicesAPI.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting EndpointSlice %s: %w", s.Name, err)
		}
		c.tracker.record(key, uid, deleted)
		c.metrics.changes.WithLabelValues("delete").Inc()
		removed += len(s.Endpoints)
	}
	c.metrics.added.WithLabelValues().Observe(float64(added))
	c.metrics.removed.WithLabelValues().Observe(float64(removed))
	td := ""
	if svc != nil && svc.Spec.TrafficDistribution != nil {
		td = *svc.Spec.TrafficDistribution
	}
	c.metrics.changed.WithLabelValues(td).Observe(float64(len(plan.creates) + len(plan.updates) + len(plan.deletes)))
	c.logger.Debug("endpoint slices written", "service", key.String(), "created", len(plan.creates),
		"updated", len(plan.updates), "deleted", len(plan.deletes), "endpoints_added", added, "endpoints_removed", removed)
	return nil
}

// endpointDiff counts the addresses an update adds and removes.
func endpointDiff(before, after *discoveryv1.EndpointSlice) (added, removed int) {
	old := map[string]bool{}
	if before != nil {
		for _, ep := range before.Endpoints {
			if len(ep.Addresses) > 0 {
				old[ep.Addresses[0]] = true
			}
		}
	}
	for _, ep := range after.Endpoints {
		if len(ep.Addresses) > 0 && !old[ep.Addresses[0]] {
			added++
		}
		delete(old, firstAddress(ep))
	}
	return added, len(old)
}

func firstAddress(ep discoveryv1.Endpoint) string {
	if len(ep.Addresses) == 0 {
		return ""
	}
	return ep.Addresses[0]
}

type discardEvents struct{}

func (discardEvents) Eventf(runtime.Object, string, string, string, ...any) {}
