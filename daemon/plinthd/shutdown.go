package plinthd

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/node"
	"github.com/plinth/plinth/daemon/shutdown"
)

// newGracefulShutdown builds graceful node shutdown from the configuration; nil when
// it is off (no grace period configured). pods may be nil (pods off).
func newGracefulShutdown(cfg config.Config, pods shutdown.Pods, registry prometheus.Registerer, logger *slog.Logger) (*shutdown.Manager, error) {
	cb := cfg.ShutdownBands()
	if cb == nil {
		return nil, nil
	}
	bands := make([]shutdown.Band, len(cb))
	for i, b := range cb {
		bands[i] = shutdown.Band{Priority: b.Priority, GracePeriod: b.GracePeriod}
	}
	return shutdown.New(shutdown.Config{
		Bands:     bands,
		StateFile: filepath.Join(cfg.StateDir, shutdown.StateFileName),
		Dial: func(ctx context.Context) (shutdown.Logind, error) {
			lg, err := shutdown.DialLogind(ctx, "")
			if err != nil {
				return nil, err
			}
			return lg, nil
		},
		Pods:       pods,
		Clock:      clock.RealClock{},
		Registerer: registry,
		Logger:     logger.With("component", "shutdown"),
	})
}

// runGracefulShutdown runs m until ctx is done. Without logind (no system bus, as on a
// host or in a container without systemd) it says so and returns: the node runs on,
// and its pods are not stopped before the machine goes down.
func runGracefulShutdown(ctx context.Context, m *shutdown.Manager, logger *slog.Logger) {
	err := m.Run(ctx)
	switch {
	case errors.Is(err, shutdown.ErrLogindUnavailable):
		logger.Warn("graceful node shutdown is OFF although a shutdown grace period is configured: systemd-logind cannot be reached over the D-Bus system bus, so pods are not stopped before the machine shuts down", "err", err)
	case err != nil:
		logger.Error("graceful node shutdown stopped", "err", err)
	}
}

// shutdownConditions are the pressure conditions plus Ready=False while the node shuts
// down (kubelet's NotReady with "node is shutting down"); a change of either is
// announced at once.
type shutdownConditions struct {
	pressure interface {
		node.ConditionSource
		node.ConditionNotifier
	}
	shutdown shutdownState
	changed  chan struct{}
}

// shutdownState is what the conditions read of *shutdown.Manager.
type shutdownState interface {
	ShuttingDown() bool
	Changed() <-chan struct{}
}

func newShutdownConditions(pressure interface {
	node.ConditionSource
	node.ConditionNotifier
}, m shutdownState) *shutdownConditions {
	return &shutdownConditions{pressure: pressure, shutdown: m, changed: make(chan struct{}, 1)}
}

// Conditions implements node.ConditionSource.
func (c *shutdownConditions) Conditions() []corev1.NodeCondition {
	conds := c.pressure.Conditions()
	if !c.shutdown.ShuttingDown() {
		return conds
	}
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
		Reason: node.ReasonNotReady, Message: shutdown.NotReadyMessage}
	for i := range conds {
		if conds[i].Type == corev1.NodeReady {
			conds[i] = notReady
			return conds
		}
	}
	return append(conds, notReady)
}

// Changed implements node.ConditionNotifier.
func (c *shutdownConditions) Changed() <-chan struct{} { return c.changed }

// forward passes on both sources' changes until ctx is done.
func (c *shutdownConditions) forward(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.pressure.Changed():
		case <-c.shutdown.Changed():
		}
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// shutdownPods is the pod runtime as graceful node shutdown sees it.
type shutdownPods struct{ rt *podRuntime }

var _ shutdown.Pods = shutdownPods{}

// Active implements shutdown.Pods: the pods the runtime runs (none before it started).
func (p shutdownPods) Active() []*corev1.Pod { return p.rt.runningPods() }

// Terminate implements shutdown.Pods: the pod is stopped with grace and left Failed
// (reason Terminated, a DisruptionTarget condition), as kubelet's shutdown manager
// leaves it. It returns once that status is written too, so the lock is not released
// (and the machine not shut down) with the pod still Running in the API.
func (p shutdownPods) Terminate(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	done := make(chan struct{})
	var once sync.Once
	ok := p.rt.stopForShutdown(pod.UID, grace, func() { once.Do(func() { close(done) }) })
	if !ok {
		return nil // gone already, or being stopped by someone else
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !p.rt.status.waitWritten(ctx, pod.UID) {
		return ctx.Err()
	}
	return nil
}

// markShutdownTerminated makes st what kubelet's shutdown manager leaves on a pod it
// stopped: reason Terminated, its message, and the DisruptionTarget condition (reason
// TerminationByKubelet). The caller sets the phase.
func markShutdownTerminated(st *corev1.PodStatus, now time.Time) {
	st.Reason, st.Message = shutdown.ReasonTerminated, shutdown.MessageTerminated
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonTerminationByKubelet, Message: shutdown.MessageTerminated, LastTransitionTime: metav1.NewTime(now)}
	for i := range st.Conditions {
		if st.Conditions[i].Type == corev1.DisruptionTarget {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
