//go:build !linux

package plinthd

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/pressure"
)

// podRuntime runs no pods off Linux.
type podRuntime struct {
	logger *slog.Logger
	status *podStatusWriter
}

func newPodRuntime(_ config.Config, client nodeclient.Interface, _ string, _ prometheus.Registerer, logger *slog.Logger) *podRuntime {
	return &podRuntime{logger: logger, status: newPodStatusWriter(client, logger)}
}

func (r *podRuntime) Check() error { return errors.New("pods run on Linux only") }

func (r *podRuntime) run(context.Context) {
	r.logger.Error("pods run on Linux only; none run on this node")
}

func (r *podRuntime) evict(types.UID, string, time.Duration) bool { return false }

func (r *podRuntime) evictedGone(types.UID) (gone, ours bool) { return false, false }

// Reclaim frees nothing: no pods run here.
func (r *podRuntime) Reclaim(context.Context, pressure.Signal) (int64, error) { return 0, nil }

func (r *podRuntime) conditionsChanged([]corev1.NodeCondition) {}

// cleanupPodCgroups has nothing to remove: no pods run here.
func cleanupPodCgroups(string, *slog.Logger) error { return nil }

func (r *podRuntime) runningPods() []*corev1.Pod { return nil }
