package pressuresignals

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/cgroup"
)

// RuntimePods is the pressure manager's PodLister when plinthd runs pods itself: the
// pods its runtime runs now (kubelet's active pods), each with what its pod cgroup
// (<Parent>/pod<uid>) uses: the memory working set and the task count. A pod bound to
// the node that the runtime has not started, or is already stopping, is no candidate:
// evicting it through the API would only delete a pod that uses nothing here.
//
// Ephemeral storage and inodes are not measured, so pods rank for those by priority
// alone, as with APIPods.
type RuntimePods struct {
	// Running returns the pods the runtime runs; nil or empty before it runs any.
	Running func() []*corev1.Pod
	// Cgroups is the host's cgroup layout; nil measures nothing (every usage zero).
	Cgroups *cgroup.Host
	// Parent is the cgroup holding the pod cgroups (pods.cgroupParent).
	Parent string
	Logger *slog.Logger
}

var _ pressure.PodLister = RuntimePods{}

// List implements pressure.PodLister.
func (r RuntimePods) List(context.Context) ([]pressure.Pod, error) {
	running := r.Running()
	out := make([]pressure.Pod, 0, len(running))
	for _, pod := range running {
		out = append(out, pressure.PodFromAPI(pod, r.usage(pod)))
	}
	return out, nil
}

// usage reads the pod's cgroup; what cannot be read (a pod whose cgroup is being made
// or removed) counts as zero, so it ranks by its requests and priority.
func (r RuntimePods) usage(pod *corev1.Pod) pressure.Usage {
	var u pressure.Usage
	if r.Cgroups == nil {
		return u
	}
	path, err := podcgroup.Path(r.Parent, string(pod.UID))
	if err != nil {
		r.Logger.Debug("pod usage unavailable", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return u
	}
	if m, err := r.Cgroups.Memory(path); err == nil {
		u.MemoryBytes = int64(min(m.WorkingSetBytes, uint64(1)<<62))
	} else {
		r.Logger.Debug("pod memory usage unavailable", "pod", pod.Namespace+"/"+pod.Name, "cgroup", path, "err", err)
	}
	if p, err := r.Cgroups.PIDs(path); err == nil {
		u.Processes = int64(min(p.Current, uint64(1)<<62))
	} else {
		r.Logger.Debug("pod task count unavailable", "pod", pod.Namespace+"/"+pod.Name, "cgroup", path, "err", err)
	}
	return u
}
