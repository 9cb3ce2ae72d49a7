package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
	"github.com/plinth/plinth/kernel/seccomp"
)

// Status is a check's verdict.
type Status string

const (
	// Pass: the feature is there, or not needed and harmless.
	Pass Status = "PASS"
	// Warn: plinthd works, with less (a feed off, a limit not applied).
	Warn Status = "WARN"
	// Fail: the configuration needs the feature and the host lacks it.
	Fail Status = "FAIL"
)

// Check is one feature's verdict.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

// Report is every check, in a fixed order.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed lists the failed checks.
func (r Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// Err is nil without FAILs, else an error naming each failed check and why.
func (r Report) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, c := range failed {
		parts[i] = c.Name + ": " + c.Reason
	}
	return fmt.Errorf("this host cannot run plinthd as configured (plinthctl check shows every check): %s", strings.Join(parts, "; "))
}

// String prints one aligned line per check: status, name, reason.
func (r Report) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%s\t%s\t%s\n", c.Status, c.Name, c.Reason)
	}
	w.Flush()
	return b.String()
}

// JSON is the report as an indented JSON document.
func (r Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ") // plain strings cannot fail to marshal
	return append(b, '\n')
}

// Needs is what the configuration uses, so that a missing feature fails only where
// it is used.
type Needs struct {
	Pods           bool // the pod runtime runs (pods.enabled, or a kubeconfig)
	Proxy          bool // the Service proxy runs
	SeccompDefault bool // pods.seccompDefault: every container gets a profile
	FailSwapOn     bool
	SwapBehavior   string
	RuncPath       string // pods.runcPath; empty means runc in PATH
	MaxPods        int32
	PodPidsLimit   int64
}

// NeedsOf reads what cfg uses.
func NeedsOf(cfg config.Config) Needs {
	return Needs{
		Pods:           cfg.PodsEnabled(),
		Proxy:          cfg.ProxyEnabled(),
		SeccompDefault: cfg.Pods.SeccompDefault,
		FailSwapOn:     cfg.FailSwapOn,
		SwapBehavior:   cfg.MemorySwap.SwapBehavior,
		RuncPath:       cfg.Pods.RuncPath,
		MaxPods:        cfg.MaxPods,
		PodPidsLimit:   cfg.Pods.PodPidsLimit,
	}
}

// Env is where the checks look: the kernel's features, the linked libseccomp and the
// runc binary. HostEnv is the running system's; tests fake each part.
type Env struct {
	System *features.System
	// Libseccomp reports the linked libseccomp (kernel/seccomp.Probe).
	Libseccomp func() (seccomp.Support, error)
	// Runc finds the runc binary (the configured path, else PATH) and returns its
	// `runc --version` output.
	Runc func(ctx context.Context, configured string) (path, version string, err error)
}

// HostEnv probes the running system.
func HostEnv() Env {
	return Env{System: features.HostSystem(), Libseccomp: seccomp.Probe, Runc: runcVersion}
}

// Run performs every check.
func Run(ctx context.Context, env Env, needs Needs) Report {
	c := &checker{env: env, s: env.System, needs: needs}
	c.kernel()
	c.cgroups()
	c.nftables()
	c.pressureFeeds()
	c.seccomp()
	c.runc(ctx)
	c.swap()
	c.sysctls()
	c.userNamespaces()
	return Report{Checks: c.out}
}

type checker struct {
	env   Env
	s     *features.System
	needs Needs
	out   []Check

	version features.KernelVersion
	known   bool        // version parsed
	mode    cgroup.Mode // 0 when undetected
}

func (c *checker) add(name string, st Status, format string, args ...any) {
	c.out = append(c.out, Check{Name: name, Status: st, Reason: fmt.Sprintf(format, args...)})
}

// needed is Fail when used, else Warn: the verdict on a missing feature.
func needed(used bool) Status {
	if used {
		return Fail
	}
	return Warn
}

// below says whether the kernel is known to be older than major.minor.
func (c *checker) below(major, minor int) bool {
	return c.known && !c.version.AtLeast(major, minor)
}

func (c *checker) kernel() {
	v, r := c.s.Kernel()
	if !r.Available {
		c.add("kernel", Warn, "version unknown, so no feature is checked against it: %s", r.Reason)
		return
	}
	c.version, c.known = v, true
	c.add("kernel", Pass, "%s", r.Reason)
}
