package preflight

import (
	"fmt"
	"slices"
	"strings"

	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

// Minimum kernels: kube-proxy's nftables mode needs 5.13; Kubernetes needs 5.8 for
// cgroup v2; PSI arrived in 4.20; BPF ring buffers in 5.8.
const (
	nftablesMajor, nftablesMinor = 5, 13
	cgroup2Major, cgroup2Minor   = 5, 8
)

// podControllers are the cgroup controllers runc and the pod cgroups need.
var podControllers = []string{"cpu", "memory", "pids"}

func (c *checker) cgroups() {
	mode, r := c.s.Cgroups()
	c.mode = mode
	if !r.Available {
		c.add("cgroup mode", needed(c.needs.Pods), "%s", r.Reason)
		return
	}
	if mode == cgroup.Unified && c.below(cgroup2Major, cgroup2Minor) {
		c.add("cgroup mode", needed(c.needs.Pods), "%s, but kernel %d.%d is older than %d.%d, which Kubernetes requires for cgroup v2",
			r.Reason, c.version.Major, c.version.Minor, cgroup2Major, cgroup2Minor)
	} else {
		c.add("cgroup mode", Pass, "%s", r.Reason)
	}
	ctrls, err := c.s.CgroupControllers(mode)
	if err != nil {
		c.add("cgroup controllers", needed(c.needs.Pods), "cannot list them: %v", err)
		return
	}
	var missing []string
	for _, want := range podControllers {
		if !slices.Contains(ctrls, want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		c.add("cgroup controllers", needed(c.needs.Pods), "%s missing (have: %s); pods need %s",
			strings.Join(missing, ", "), strings.Join(ctrls, " "), strings.Join(podControllers, ", "))
		return
	}
	c.add("cgroup controllers", Pass, "%s", strings.Join(ctrls, " "))
}

func (c *checker) nftables() {
	use := c.needs.Proxy || c.needs.Pods
	var usedBy []string
	if c.needs.Proxy {
		usedBy = append(usedBy, "the Service proxy")
	}
	if c.needs.Pods {
		usedBy = append(usedBy, "the pod network's masquerade table")
	}
	users := strings.Join(usedBy, " and ")
	if c.needs.Proxy && c.below(nftablesMajor, nftablesMinor) {
		c.add("nftables", Fail, "kernel %d.%d is older than %d.%d, which kube-proxy's nftables mode (and so %s) requires",
			c.version.Major, c.version.Minor, nftablesMajor, nftablesMinor, users)
		return
	}
	r := c.s.NFTablesNetlink()
	switch {
	case r.Available:
		c.add("nftables", Pass, "%s (kernel %s; the nftables mode needs %d.%d)", r.Reason, c.kernelWord(), nftablesMajor, nftablesMinor)
	case !use:
		c.add("nftables", Warn, "%s; not used with this configuration", r.Reason)
	default:
		c.add("nftables", Fail, "%s; needed by %s", r.Reason, users)
	}
	ct := c.s.Conntrack()
	switch {
	case ct.Available:
		c.add("conntrack", Pass, "%s", ct.Reason)
	default:
		c.add("conntrack", Warn, "%s; the Service proxy's NAT and stale UDP flow deletion need it", ct.Reason)
	}
}

// pressureFeeds checks what the pressure signals read: PSI, BTF, BPF programs, ring
// buffers and tracepoints. plinthd runs without any of them (each feed is best effort),
// so a missing one is a WARN.
func (c *checker) pressureFeeds() {
	psi := c.s.PSI()
	if psi.Available {
		c.add("psi", Pass, "%s; kernel %s (PSI needs 4.20)", psi.Reason, c.kernelWord())
	} else {
		c.add("psi", Warn, "%s; the PSI pressure feeds are off", psi.Reason)
	}
	btf := c.s.BTF()
	if btf.Available {
		c.add("btf", Pass, "%s", btf.Reason)
	} else {
		c.add("btf", Warn, "%s; tp_btf programs cannot load, plain tracepoints are used", btf.Reason)
	}
	tp, tpBTF := c.s.BPFPrograms()
	c.passOrWarn(tp, "the plain tracepoint variant of the BPF feeds is unavailable")
	c.passOrWarn(tpBTF, "the tp_btf variant of the BPF feeds is unavailable")
	c.passOrWarn(c.s.RingBuffer(), "")
	_, tracefs := c.s.Tracefs()
	if tracefs.Available {
		c.add("tracefs", Pass, "%s", tracefs.Reason)
	} else if strings.Contains(tracefs.Reason, "CONFIG_TRACING") {
		c.add("tracefs", Warn, "%s", tracefs.Reason)
	} else {
		c.add("tracefs", Pass, "not mounted at %s; plinthd mounts it at start", c.s.TracefsDir)
	}
	if r := c.s.BPFFS(); r.Available {
		c.add("bpffs", Pass, "%s", r.Reason)
	} else {
		c.add("bpffs", Pass, "not mounted at %s; plinthd mounts it at start", c.s.BPFFSDir)
	}
	for _, point := range features.PressureTracepoints() {
		plain, typed := c.s.Tracepoint(point), c.s.TracepointBTF(point)
		name := "tracepoint " + point.String()
		switch {
		case typed.Available && plain.Available:
			c.add(name, Pass, "tp_btf (%s) and tracepoint (%s)", typed.Reason, plain.Reason)
		case typed.Available:
			c.add(name, Pass, "tp_btf (%s); tracepoint: %s", typed.Reason, plain.Reason)
		case plain.Available:
			c.add(name, Pass, "tracepoint (%s); tp_btf: %s", plain.Reason, typed.Reason)
		case !tracefs.Available && !strings.Contains(tracefs.Reason, "CONFIG_TRACING"):
			c.add(name, Warn, "tp_btf: %s; tracepoint: not known until plinthd mounts tracefs", typed.Reason)
		default:
			c.add(name, Warn, "tp_btf: %s; tracepoint: %s; its feed is off", typed.Reason, plain.Reason)
		}
	}
}

func (c *checker) passOrWarn(r features.Result, consequence string) {
	if r.Available {
		c.add(r.Name, Pass, "%s", r.Reason)
		return
	}
	if consequence != "" {
		c.add(r.Name, Warn, "%s; %s", r.Reason, consequence)
		return
	}
	c.add(r.Name, Warn, "%s", r.Reason)
}

// seccomp: pods' profiles need kernel filters and libseccomp to compile them. With
// seccompDefault every container has a profile, so a missing one fails; otherwise
// only pods asking for a profile would fail, a WARN.
func (c *checker) seccomp() {
	st := Warn
	if c.needs.Pods && c.needs.SeccompDefault {
		st = Fail
	}
	why := "pods that ask for a seccomp profile cannot start"
	if !c.needs.Pods {
		why = "not used: pods are off"
	}
	r := c.s.Seccomp()
	if r.Available {
		c.add("seccomp", Pass, "%s", r.Reason)
	} else {
		c.add("seccomp", st, "%s; %s", r.Reason, why)
	}
	if c.env.Libseccomp == nil {
		c.add("libseccomp", Warn, "not probed")
		return
	}
	sup, err := c.env.Libseccomp()
	switch {
	case err != nil:
		c.add("libseccomp", st, "%v; %s", err, why)
	case sup.Major < 2 || (sup.Major == 2 && sup.Minor < 5):
		c.add("libseccomp", Warn, "%s: older than 2.5, which runc needs for SCMP_ACT_NOTIFY (API level 6)", sup)
	default:
		c.add("libseccomp", Pass, "%s", sup)
	}
}

// kernelWord prints the kernel's major.minor for reasons, or "unknown".
func (c *checker) kernelWord() string {
	if !c.known {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", c.version.Major, c.version.Minor)
}
