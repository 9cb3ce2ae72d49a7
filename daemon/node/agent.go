package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
)

// registerAttemptTimeout bounds one registration attempt (create, or get and update),
// so a control service that accepts connections but never answers still lets the
// retry loop turn.
const registerAttemptTimeout = 30 * time.Second

// Agent registers the Node, renews its Lease and reports its status. Register,
// RunLease and RunStatus may run concurrently; each loop runs at most once at a time.
type Agent struct {
	client     nodeclient.Interface
	cfg        Config
	facts      HostFacts
	conditions ConditionSource
	clock      clock.WithTicker
	logger     *slog.Logger
	metrics    *agentMetrics

	renewInterval time.Duration
	leaseLive     *loopLiveness
	statusLive    *loopLiveness

	mu      sync.Mutex
	nodeUID types.UID // learnt at registration or from a GET; owner of the Lease

	// lease is the last Lease the control service returned, owned by RunLease: renewals
	// update this copy instead of fetching the Lease every time.
	lease *coordinationv1.Lease
	// lastReport is when status was last posted successfully, owned by RunStatus.
	lastReport time.Time
}

// NewAgent checks cfg (zero durations and MaxPods take their defaults) and registers
// the metrics with reg (nil registers nothing). conditions supplies the non-Ready
// conditions; nil means NoPressure.
func NewAgent(client nodeclient.Interface, cfg Config, facts HostFacts, conditions ConditionSource,
	clk clock.WithTicker, reg prometheus.Registerer, logger *slog.Logger) (*Agent, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if conditions == nil {
		conditions = NoPressure{}
	}
	m, err := newAgentMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("node agent metrics: %w", err)
	}
	// Kubelet renews at a quarter of the lease duration: three renewals can fail before
	// the node controller sees the lease expire.
	renew := cfg.LeaseDuration / 4
	return &Agent{
		client:        client,
		cfg:           cfg,
		facts:         facts,
		conditions:    conditions,
		clock:         clk,
		logger:        logger.With("node", cfg.NodeName),
		metrics:       m,
		renewInterval: renew,
		leaseLive:     newLoopLiveness("node lease", clk, max(renew, backoffMax)),
		statusLive:    newLoopLiveness("node status", clk, cfg.StatusUpdateFrequency),
	}, nil
}

// Run registers the Node (when RegisterNode is set) while renewing the Lease, then
// reports status, until ctx is done. The lease loop starts at once so the heartbeat
// does not wait for a slow registration; status starts after registration because
// there is no Node to report on before. It returns nil when ctx is done, after every
// loop it started has returned.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.RunLease(ctx) })
	if _, err := a.Register(ctx); err != nil {
		wg.Wait()
		return nil // only ctx ends registration
	}
	wg.Go(func() { _ = a.RunStatus(ctx) })
	wg.Wait()
	return nil
}

// LeaseAlive reports an error when the lease loop has not finished an attempt within
// twice its longest wait plus slack, or has stopped. A failing control service does
// not make it fail. It is nil before RunLease starts.
func (a *Agent) LeaseAlive() error { return a.leaseLive.alive() }

// StatusAlive is LeaseAlive for the status loop.
func (a *Agent) StatusAlive() error { return a.statusLive.alive() }

// wait sleeps d on the injected clock; false means ctx ended first.
func (a *Agent) wait(ctx context.Context, d time.Duration) bool {
	t := a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func (a *Agent) setNodeUID(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nodeUID = uid
}

func (a *Agent) knownNodeUID() types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeUID
}

// nodeOwnerReference is the Lease's owner reference to the Node, so deleting the Node
// garbage-collects its Lease. It is nil while the Node's UID is unknown.
func (a *Agent) nodeOwnerReference(ctx context.Context) []metav1.OwnerReference {
	uid := a.knownNodeUID()
	if uid == "" {
		// Not registered by us (RegisterNode off, or registration still retrying): the
		// Node may exist anyway.
		n, err := a.client.Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		uid = n.UID
		if uid == "" {
			return nil
		}
		a.setNodeUID(uid)
	}
	return []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       a.cfg.NodeName,
		UID:        uid,
	}}
}
