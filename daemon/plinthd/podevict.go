package plinthd

import (
	"context"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
)

// podEvictor is the pressure manager's Evictor: a pod this plinthd runs is stopped by
// the pod runtime with its grace period and failed in the API (reason Evicted, the
// message naming the signal), as kubelet's eviction manager does; any other pod (the
// runtime is off or not started yet) is evicted through the API.
type podEvictor struct {
	api *pressuresignals.APIPods
	rt  *podRuntime // nil when pods are off
}

var _ pressure.Evictor = podEvictor{}

// Evict implements pressure.Evictor.
func (e podEvictor) Evict(ctx context.Context, pod pressure.Pod, message string) error {
	if e.rt != nil && e.rt.evict(pod.UID, message) {
		return nil
	}
	return e.api.Evict(ctx, pod, message)
}

// Gone implements pressure.Evictor: a pod the runtime evicts is gone once its
// containers are.
func (e podEvictor) Gone(pod pressure.Pod) bool {
	if e.rt != nil {
		if gone, ours := e.rt.evictedGone(pod.UID); ours {
			return gone
		}
	}
	return e.api.Gone(pod)
}
