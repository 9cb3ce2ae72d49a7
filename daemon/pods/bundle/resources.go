package bundle

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/internal/podqos"
)

// CPU constants as kubelet uses them to turn millicores into CFS settings.
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	cpuPeriodUsec = 100000
	minQuotaUsec  = 1000
)

// MilliCPUToShares is the cpu.shares of a CPU request (runc converts shares to a v2
// cpu.weight itself).
func MilliCPUToShares(milli int64) uint64 {
	if milli <= 0 {
		return minShares
	}
	s := milli * sharesPerCPU / 1000
	switch {
	case s < minShares:
		return minShares
	case s > maxShares:
		return maxShares
	}
	return uint64(s)
}

// MilliCPUToQuota is the CFS quota (per cpuPeriodUsec) of a CPU limit; 0 means none.
func MilliCPUToQuota(milli int64) int64 {
	if milli <= 0 {
		return 0
	}
	q := milli * cpuPeriodUsec / 1000
	if q < minQuotaUsec {
		q = minQuotaUsec
	}
	return q
}

func buildResources(in Input, field string) (*specs.LinuxResources, error) {
	c := in.Container
	r := &specs.LinuxResources{
		// Deny every device; runc adds the standard ones (null, zero, tty, ...) itself.
		Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	}
	req, reqSet := c.Resources.Requests[corev1.ResourceCPU]
	lim, limSet := c.Resources.Limits[corev1.ResourceCPU]
	if !reqSet && limSet {
		req = lim // the API defaults a missing request to the limit
	}
	shares := MilliCPUToShares(req.MilliValue())
	r.CPU = &specs.LinuxCPU{Shares: &shares}
	if limSet {
		if lim.Sign() <= 0 {
			return nil, fmt.Errorf("%s.resources.limits.cpu: %q must be positive", field, lim.String())
		}
		quota, period := MilliCPUToQuota(lim.MilliValue()), uint64(cpuPeriodUsec)
		r.CPU.Quota, r.CPU.Period = &quota, &period
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		if mem.Sign() <= 0 {
			return nil, fmt.Errorf("%s.resources.limits.memory: %q must be positive", field, mem.String())
		}
		r.Memory = &specs.LinuxMemory{Limit: ptr(mem.Value())}
	}
	if in.PidsLimit > 0 {
		r.Pids = &specs.LinuxPids{Limit: ptr(in.PidsLimit)}
	}
	if err := applySwap(in, r, field); err != nil {
		return nil, err
	}
	return r, nil
}

// oomScoreAdj follows kubelet's policy: Guaranteed pods -997, BestEffort 1000,
// Burstable containers between 3 and 999 by the share of node memory they request.
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, nodeMemory int64) int {
	switch podqos.Class(pod) {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	if nodeMemory <= 0 {
		return 999
	}
	req := c.Resources.Requests[corev1.ResourceMemory]
	adj := 1000 - (1000*req.Value())/nodeMemory
	switch {
	case adj < 3:
		return 3
	case adj >= 1000:
		return 999
	}
	return int(adj)
}
