package scheduler

import (
	v1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/internal/podqos"
	"github.com/plinth/plinth/internal/podrequests"
)

// amounts are resource quantities in the unit the filters compare: millicores for cpu,
// the plain value (bytes, counts) for everything else.
type amounts map[v1.ResourceName]int64

func fromList(list v1.ResourceList) amounts { return amounts(podrequests.Of(list)) }

func (a amounts) add(b amounts) {
	for name, v := range b {
		a[name] += v
	}
}

func (a amounts) sub(b amounts) {
	for name, v := range b {
		a[name] -= v
	}
}

func (a amounts) clone() amounts {
	c := make(amounts, len(a))
	c.add(a)
	return c
}

// The requests kube-scheduler assumes, for scoring only, for a pod that asks for no
// cpu or no memory: without them, a node full of pods without requests would look
// empty.
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 * 1024 * 1024
)

// podDemand is what a pod takes from a node.
type podDemand struct {
	// requests are the effective requests the filters compare with allocatable.
	requests amounts
	// scoringCPU and scoringMemory are the requests with the defaults above for zeros.
	scoringCPU, scoringMemory int64
}

// demandOf computes a pod's effective requests as the kubelet and kube-scheduler do:
// the app containers and sidecars (init containers that keep running) together, or
// the largest init phase when that is larger (a plain init container runs next to the
// sidecars started before it), plus the pod overhead. Pod-level requests, where set,
// replace the containers' sum for their resources.
func demandOf(pod *v1.Pod) podDemand {
	sum := amounts(podrequests.Effective(pod, func(v1.ResourceName) bool { return true }))
	d := podDemand{requests: sum, scoringCPU: sum[v1.ResourceCPU], scoringMemory: sum[v1.ResourceMemory]}
	if d.scoringCPU == 0 {
		d.scoringCPU = defaultMilliCPURequest
	}
	if d.scoringMemory == 0 {
		d.scoringMemory = defaultMemoryRequest
	}
	return d
}

// bestEffort reports the BestEffort QoS class: no container asks for or is limited in
// cpu or memory.
func bestEffort(pod *v1.Pod) bool { return podqos.Class(pod) == v1.PodQOSBestEffort }

// nodeUsage is what the pods on (or being bound to) a node take from it.
type nodeUsage struct {
	requests                  amounts
	scoringCPU, scoringMemory int64
	pods                      int
}

func (u *nodeUsage) add(d podDemand, sign int64) {
	if u.requests == nil {
		u.requests = amounts{}
	}
	for name, v := range d.requests {
		u.requests[name] += sign * v
	}
	u.scoringCPU += sign * d.scoringCPU
	u.scoringMemory += sign * d.scoringMemory
	u.pods += int(sign)
}
