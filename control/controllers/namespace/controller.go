package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// namespaces is the resource the controller watches.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// discoveryRetry is how soon a failed discovery is tried again: the control service
// starts its controllers while its listener comes up.
const discoveryRetry = time.Second

// Controller empties and releases namespaces being deleted.
type Controller struct {
	client  dynamic.Interface
	disc    discovery.DiscoveryInterface
	clock   clock.WithTicker
	logger  *slog.Logger
	opts    Options
	metrics *metrics
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New builds a controller; Run starts it.
func New(cfg Config) (*Controller, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{
		client:  cfg.Client,
		disc:    cfg.Discovery,
		clock:   cfg.Clock,
		logger:  cfg.Logger.With("controller", "namespace"),
		opts:    cfg.Options,
		metrics: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Clock: cfg.Clock}),
	}, nil
}

// Run waits until the API serves namespaces, watches them, and empties and releases
// every namespace marked for deletion with Options.Workers workers. It returns nil
// once ctx is done and everything it started has stopped, and must be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.logger.Info("starting", "workers", c.opts.Workers)
	defer c.logger.Info("stopped")
	var running sync.WaitGroup
	defer func() {
		c.queue.ShutDown()
		running.Wait()
	}()
	if !c.waitForNamespaces(ctx) {
		return nil
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c.client, namespaces, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNamespace,
		UpdateFunc: func(_, obj any) { c.onNamespace(obj) },
	})
	if err != nil {
		return fmt.Errorf("namespace: adding event handler: %w", err)
	}
	running.Go(func() { inf.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil // only when ctx is done
	}
	for range c.opts.Workers {
		running.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

// waitForNamespaces returns true once discovery lists v1 namespaces, false if ctx
// ends first.
func (c *Controller) waitForNamespaces(ctx context.Context) bool {
	logged := false
	for {
		wait := discoveryRetry
		served, err := namespacesServed(c.disc)
		switch {
		case served:
			return true
		case err != nil:
			c.logger.Info("discovery failed; retrying", "err", err, "retry_in", wait)
		default:
			wait = c.opts.DiscoveryPeriod
			if !logged {
				c.logger.Info("the API does not serve namespaces; waiting for it", "check_every", wait)
				logged = true
			}
		}
		t := c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
}

func namespacesServed(disc discovery.DiscoveryInterface) (bool, error) {
	list, err := disc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, fmt.Errorf("namespace: discovering v1 resources: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == namespaces.Resource {
			return true, nil
		}
	}
	return false, nil
}

func (c *Controller) onNamespace(obj any) {
	acc, err := meta.Accessor(obj)
	if err != nil || acc.GetDeletionTimestamp() == nil {
		return
	}
	c.queue.Add(acc.GetName())
}

// processNext handles one namespace; false means the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	err := c.reconcile(ctx, name)
	switch {
	case err == nil:
		c.queue.Forget(name)
	case ctx.Err() != nil:
	case apierrors.IsConflict(err):
		c.logger.Debug("retrying", "namespace", name, "err", err)
		c.queue.AddRateLimited(name)
	default:
		c.logger.Warn("retrying", "namespace", name, "err", err, "retries", c.queue.NumRequeues(name))
		c.queue.AddRateLimited(name)
	}
	return true
}
