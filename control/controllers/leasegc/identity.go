package leasegc

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Where identity Leases live and how they are told from other Leases, following
// kube-apiserver's identity Leases (label key k8s.io/component).
const (
	Namespace      = metav1.NamespaceSystem
	ComponentLabel = "k8s.io/component"
	Component      = "plinth-control"
	// LabelSelector selects identity Leases.
	LabelSelector = ComponentLabel + "=" + Component
)

// The defaults are kube-apiserver's for its identity Leases.
const (
	DefaultLeaseDuration = time.Hour
	DefaultRenewInterval = 10 * time.Second
)

// IdentityLeaseName is the name of the identity Lease of a replica on hostname:
// plinth-control- and the first 80 bits of the hostname's SHA-256 in lowercase base32
// without padding. It is stable, so a replica started again on the same host renews
// the Lease it had.
func IdentityLeaseName(hostname string) string {
	sum := sha256.Sum256([]byte(hostname))
	return Component + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
}

// PublisherConfig wires a Publisher. Client, Clock, Hostname and Identity are required.
type PublisherConfig struct {
	Client kubernetes.Interface
	Clock  clock.WithTicker
	// Hostname names the Lease (through IdentityLeaseName) and fills the
	// kubernetes.io/hostname label.
	Hostname string
	// Identity is the holderIdentity: the replica's identity, the one it uses for
	// leader election.
	Identity string
	// LeaseDuration (whole seconds) and RenewInterval; zero means the defaults, 1 h and
	// 10 s.
	LeaseDuration time.Duration
	RenewInterval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// Publisher keeps one replica's identity Lease renewed.
type Publisher struct {
	client   kubernetes.Interface
	clock    clock.WithTicker
	name     string
	hostname string
	identity string
	duration time.Duration
	interval time.Duration
	logger   *slog.Logger
}

// NewPublisher checks cfg.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Client == nil || cfg.Clock == nil || cfg.Hostname == "" || cfg.Identity == "" {
		return nil, errors.New("leasegc: PublisherConfig needs Client, Clock, Hostname and Identity; one of them is empty")
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	if cfg.LeaseDuration < time.Second || cfg.RenewInterval <= 0 || cfg.RenewInterval >= cfg.LeaseDuration {
		return nil, fmt.Errorf("leasegc: identity Lease duration %v and renew interval %v: want 0 < interval < duration, duration at least 1s", cfg.LeaseDuration, cfg.RenewInterval)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := IdentityLeaseName(cfg.Hostname)
	return &Publisher{client: cfg.Client, clock: cfg.Clock, name: name, hostname: cfg.Hostname, identity: cfg.Identity,
		duration: cfg.LeaseDuration, interval: cfg.RenewInterval,
		logger: logger.With("component", "identity-lease", "lease", Namespace+"/"+name)}, nil
}

// Name is the Lease's name.
func (p *Publisher) Name() string { return p.name }

// Run renews the Lease at once and then every RenewInterval until ctx is done, when it
// returns nil. A failed renewal is logged and tried again at the next interval: with an
// hour's duration, many may fail before anyone may take the replica for gone.
func (p *Publisher) Run(ctx context.Context) error {
	p.logger.Info("publishing the replica's identity Lease", "identity", p.identity)
	ticker := p.clock.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		if err := p.renew(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("renewing the identity Lease", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// renew creates the Lease or updates it to say this replica holds it, now.
func (p *Publisher) renew(ctx context.Context) error {
	leases := p.client.CoordinationV1().Leases(Namespace)
	now := metav1.NewMicroTime(p.clock.Now())
	lease, err := leases.Get(ctx, p.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: Namespace}}
		p.fill(lease, now)
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating identity Lease %s/%s: %w", Namespace, p.name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading identity Lease %s/%s: %w", Namespace, p.name, err)
	}
	p.fill(lease, now)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing identity Lease %s/%s: %w", Namespace, p.name, err)
	}
	return nil
}

// fill sets what the replica asserts in its Lease; a Lease another identity held
// (this host's previous replica) is acquired anew.
func (p *Publisher) fill(l *coordinationv1.Lease, now metav1.MicroTime) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[ComponentLabel] = Component
	l.Labels[v1.LabelHostname] = p.hostname
	seconds := int32(p.duration / time.Second)
	if h := l.Spec.HolderIdentity; h == nil || *h != p.identity || l.Spec.AcquireTime == nil {
		if h != nil && *h != p.identity {
			n := int32(1)
			if t := l.Spec.LeaseTransitions; t != nil {
				n = *t + 1
			}
			l.Spec.LeaseTransitions = &n
		}
		id := p.identity
		l.Spec.HolderIdentity = &id
		acquired := now
		l.Spec.AcquireTime = &acquired
	}
	l.Spec.LeaseDurationSeconds = &seconds
	l.Spec.RenewTime = &now
}
