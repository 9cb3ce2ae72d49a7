package podcgroup

import (
	"fmt"
	"path"
	"regexp"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pods/bundle"
)

// DefaultParent is the cgroup under which plinthd puts pods.
const DefaultParent = "/plinth"

// Resources are the pod-level limits of a pod's cgroup.
type Resources struct {
	// CPUShares is the sum of the containers' CPU requests as shares.
	CPUShares uint64
	// CPUQuota (per CPUPeriod µs) and MemoryLimit are set only when every container
	// has the limit; 0 means none.
	CPUQuota    int64
	CPUPeriod   uint64
	MemoryLimit int64
	// PidsLimit is the node's podPidsLimit; 0 means none.
	PidsLimit int64
}

// PodResources computes the pod's cgroup limits as kubelet does: the larger of the app
// containers' sum and the largest init container, for requests and, when every
// container sets one, limits. BestEffort pods get the minimum shares.
func PodResources(pod *corev1.Pod, podPidsLimit int64) Resources {
	type sum struct {
		cpuReq, cpuLim, memLim int64
		cpuLimAll, memLimAll   bool
	}
	total := func(cs []corev1.Container, fold func(a, b int64) int64) sum {
		s := sum{cpuLimAll: true, memLimAll: true}
		for _, c := range cs {
			req, reqSet := c.Resources.Requests[corev1.ResourceCPU]
			lim, limSet := c.Resources.Limits[corev1.ResourceCPU]
			if !reqSet && limSet {
				req = lim
			}
			s.cpuReq = fold(s.cpuReq, req.MilliValue())
			if limSet {
				s.cpuLim = fold(s.cpuLim, lim.MilliValue())
			} else {
				s.cpuLimAll = false
			}
			if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				s.memLim = fold(s.memLim, mem.Value())
			} else {
				s.memLimAll = false
			}
		}
		return s
	}
	app := total(pod.Spec.Containers, func(a, b int64) int64 { return a + b })
	init := total(pod.Spec.InitContainers, func(a, b int64) int64 { return max(a, b) })
	if len(pod.Spec.InitContainers) > 0 {
		app.cpuReq = max(app.cpuReq, init.cpuReq)
		app.cpuLim, app.cpuLimAll = max(app.cpuLim, init.cpuLim), app.cpuLimAll && init.cpuLimAll
		app.memLim, app.memLimAll = max(app.memLim, init.memLim), app.memLimAll && init.memLimAll
	}
	r := Resources{CPUShares: bundle.MilliCPUToShares(app.cpuReq), PidsLimit: podPidsLimit}
	if app.cpuLimAll && app.cpuLim > 0 {
		r.CPUQuota, r.CPUPeriod = bundle.MilliCPUToQuota(app.cpuLim), 100000
	}
	if app.memLimAll && app.memLim > 0 {
		r.MemoryLimit = app.memLim
	}
	return r
}

var validUID = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// Path is the pod's cgroup path under parent: <parent>/pod<uid>.
func Path(parent string, uid string) (string, error) {
	if !validUID.MatchString(uid) {
		return "", fmt.Errorf("pod UID %q: want letters, digits and '-'", uid)
	}
	if !path.IsAbs(parent) || path.Clean(parent) != parent {
		return "", fmt.Errorf("cgroup parent %q: want an absolute, clean path", parent)
	}
	return path.Join(parent, "pod"+uid), nil
}
