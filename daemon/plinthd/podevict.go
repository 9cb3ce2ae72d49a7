package plinthd

import (
	"context"
	"fmt"
	"time"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
)

// podEvictor is the pressure manager's Evictor. With the pod runtime on, the pods to
// choose from are the ones it runs (pressuresignals.RuntimePods), and the chosen pod
// is stopped by the runtime with its grace period and failed in the API (reason
// Evicted, the message naming the signal), as kubelet's eviction manager does. A pod
// the runtime does not run (not started yet, or stopped since the list) is never
// evicted through the API: that would delete a pod that uses nothing on this node.
// Only a plinthd without the runtime evicts through the API.
type podEvictor struct {
	api *pressuresignals.APIPods
	rt  *podRuntime // nil when pods are off
}

var _ pressure.Evictor = podEvictor{}

// Evict implements pressure.Evictor.
func (e podEvictor) Evict(ctx context.Context, pod pressure.Pod, message string, grace time.Duration) error {
	if e.rt == nil {
		return e.api.Evict(ctx, pod, message, grace)
	}
	if !e.rt.evict(pod.UID, message, grace) {
		return fmt.Errorf("pod %s (%s) is not running on this node (not started, or already stopping); nothing evicted", pod, pod.UID)
	}
	return nil
}

// Gone implements pressure.Evictor: a pod the runtime evicts is gone once its
// containers are, or once the runtime has forgotten it (the pod was deleted since).
func (e podEvictor) Gone(pod pressure.Pod) bool {
	if e.rt == nil {
		return e.api.Gone(pod)
	}
	gone, ours := e.rt.evictedGone(pod.UID)
	return gone || !ours
}
