package features

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/plinth/plinth/kernel/cgroup"
)

// Report is every probe's result at one moment.
type Report struct {
	Kernel     KernelVersion
	CgroupMode cgroup.Mode // 0 when the cgroup probe failed

	KernelResult Result
	BTF          Result
	PSI          Result
	Cgroup       Result
	RingBuffer   Result
	Tracefs      Result
	BPFFS        Result
	Seccomp      Result
	Tracepoints  []Result
}

// Probe runs every probe, checking the given tracepoints (PressureTracepoints() for
// what plinthd uses). It changes nothing on the host.
func (s *System) Probe(tracepoints ...Tracepoint) Report {
	var r Report
	r.Kernel, r.KernelResult = s.Kernel()
	r.BTF = s.BTF()
	r.PSI = s.PSI()
	r.CgroupMode, r.Cgroup = s.Cgroups()
	r.RingBuffer = s.RingBuffer()
	_, r.Tracefs = s.Tracefs()
	r.BPFFS = s.BPFFS()
	r.Seccomp = s.Seccomp()
	for _, tp := range tracepoints {
		r.Tracepoints = append(r.Tracepoints, s.Tracepoint(tp))
	}
	return r
}

// Results lists every result in the order String prints them.
func (r Report) Results() []Result {
	out := []Result{r.KernelResult, r.BTF, r.PSI, r.Cgroup, r.RingBuffer, r.Tracefs, r.BPFFS, r.Seccomp}
	return append(out, r.Tracepoints...)
}

// Missing lists the results that are not available.
func (r Report) Missing() []Result {
	var out []Result
	for _, res := range r.Results() {
		if !res.Available {
			out = append(out, res)
		}
	}
	return out
}

// String prints one aligned line per probe: name, ok or MISSING, reason.
func (r Report) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	for _, res := range r.Results() {
		status := "ok"
		if !res.Available {
			status = "MISSING"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", res.Name, status, res.Reason)
	}
	w.Flush()
	return b.String()
}
