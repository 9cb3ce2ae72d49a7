package leasegc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DefaultExpiredFor is how long an identity Lease stays past its expiry: an hour.
const DefaultExpiredFor = time.Hour

// retryDelay is the wait before a failed delete is tried again.
const retryDelay = 30 * time.Second

// CollectorConfig wires a Collector. Client, Leases and Clock are required.
type CollectorConfig struct {
	Client kubernetes.Interface
	// Leases should be an informer over kube-system restricted to LabelSelector, so the
	// cache holds identity Leases only; others it holds are ignored.
	Leases coordinationinformers.LeaseInformer
	Clock  clock.WithTicker
	// ExpiredFor is how long past renewTime+leaseDurationSeconds a Lease is deleted; 0
	// means DefaultExpiredFor.
	ExpiredFor time.Duration
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
}

// Collector deletes the identity Leases of replicas gone for ExpiredFor past expiry.
type Collector struct {
	client     kubernetes.Interface
	lister     coordinationlisters.LeaseLister
	synced     cache.InformerSynced
	clock      clock.WithTicker
	expiredFor time.Duration
	logger     *slog.Logger
	deletions  prometheus.Counter
	wake       chan struct{}
}

// NewCollector builds a collector over the informer and registers its event handler;
// the caller starts the informer.
func NewCollector(cfg CollectorConfig) (*Collector, error) {
	if cfg.Client == nil || cfg.Leases == nil || cfg.Clock == nil {
		return nil, errors.New("leasegc: CollectorConfig needs Client, Leases and Clock; one of them is nil")
	}
	if cfg.ExpiredFor < 0 {
		return nil, fmt.Errorf("leasegc: ExpiredFor %v is negative (want >= 0, 0 means %v)", cfg.ExpiredFor, DefaultExpiredFor)
	}
	if cfg.ExpiredFor == 0 {
		cfg.ExpiredFor = DefaultExpiredFor
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Collector{
		client:     cfg.Client,
		lister:     cfg.Leases.Lister(),
		clock:      cfg.Clock,
		expiredFor: cfg.ExpiredFor,
		logger:     logger.With("controller", "leasegc"),
		deletions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plinth_leasegc_identity_lease_deletions_total",
			Help: "Identity Leases of control replicas deleted because they expired long ago.",
		}),
		wake: make(chan struct{}, 1),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(c.deletions); err != nil {
			return nil, fmt.Errorf("leasegc: registering metrics: %w", err)
		}
	}
	poke := func(any) { c.poke() }
	reg, err := cfg.Leases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, obj any) { poke(obj) }, DeleteFunc: poke,
	})
	if err != nil {
		return nil, fmt.Errorf("leasegc: adding lease event handler: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

func (c *Collector) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run waits for the cache, then deletes Leases as their deadlines come, until ctx is
// done, when it returns nil.
func (c *Collector) Run(ctx context.Context) error {
	c.logger.Info("starting", "expired_for", c.expiredFor)
	defer c.logger.Info("stopped")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("leasegc: lease cache did not sync")
	}
	for {
		next, ok := c.collect(ctx)
		var timerC <-chan time.Time
		var timer clock.Timer
		if ok {
			timer = c.clock.NewTimer(next.Sub(c.clock.Now()))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-timerC:
		case <-c.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// identityLease reports whether the collector may delete l at all.
func identityLease(l *coordinationv1.Lease) bool {
	return l.Namespace == Namespace && l.Labels[ComponentLabel] == Component
}

// deadline is when l is deleted: renewTime (else creation) plus its duration plus
// expiredFor.
func deadline(l *coordinationv1.Lease, expiredFor time.Duration) time.Time {
	at := l.CreationTimestamp.Time
	if l.Spec.RenewTime != nil {
		at = l.Spec.RenewTime.Time
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		at = at.Add(time.Duration(*d) * time.Second)
	}
	return at.Add(expiredFor)
}

// collect deletes the identity Leases whose deadline has come and returns the next
// deadline, if any (or a retry time after a failed delete).
func (c *Collector) collect(ctx context.Context) (time.Time, bool) {
	leases, err := c.lister.List(labels.Everything())
	if err != nil {
		c.logger.Error("listing leases from the cache", "err", err)
		return c.clock.Now().Add(retryDelay), true
	}
	slices.SortFunc(leases, func(a, b *coordinationv1.Lease) int { return strings.Compare(a.Name, b.Name) })
	now := c.clock.Now()
	var next time.Time
	have := false
	later := func(at time.Time) {
		if !have || at.Before(next) {
			next, have = at, true
		}
	}
	for _, l := range leases {
		if !identityLease(l) {
			continue
		}
		at := deadline(l, c.expiredFor)
		if now.Before(at) {
			later(at)
			continue
		}
		if err := c.delete(ctx, l); err != nil {
			c.logger.Error("deleting an expired identity Lease", "lease", l.Namespace+"/"+l.Name, "retry_in", retryDelay, "err", err)
			later(now.Add(retryDelay))
		}
	}
	return next, have
}

// delete removes l if it is still the object the cache saw: a Lease renewed since
// conflicts and stays, and the informer's update brings its new deadline.
func (c *Collector) delete(ctx context.Context, l *coordinationv1.Lease) error {
	uid, rv := l.UID, l.ResourceVersion
	err := c.client.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case err == nil:
		c.deletions.Inc()
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		c.logger.Info("deleted the identity Lease of a replica gone since long", "lease", l.Namespace+"/"+l.Name, "holder", holder,
			"renew_time", l.Spec.RenewTime)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		c.logger.Info("identity Lease changed since it was seen expired; kept", "lease", l.Namespace+"/"+l.Name)
		return nil
	default:
		return err
	}
}
