package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

// runcTimeout bounds `runc --version`; a runc that hangs is as good as none.
const runcTimeout = 10 * time.Second

// Plinth drives runc 1.1 and newer (Debian bookworm's 1.1.5, the pinned 1.5 build).
const runcMajor, runcMinor = 1, 1

func runcVersion(ctx context.Context, configured string) (string, string, error) {
	path := configured
	if path == "" {
		p, err := exec.LookPath("runc")
		if err != nil {
			return "", "", fmt.Errorf("no runc in PATH: %w", err)
		}
		path = p
	}
	ctx, cancel := context.WithTimeout(ctx, runcTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return path, "", fmt.Errorf("%s --version: %w", path, err)
	}
	return path, string(out), nil
}

// ParseRuncVersion reads major.minor.patch from `runc --version` output ("runc
// version 1.1.5+ds1" on its first line).
func ParseRuncVersion(out string) (major, minor int, full string, err error) {
	first, _, _ := strings.Cut(out, "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "runc version ")
	if !ok {
		return 0, 0, "", fmt.Errorf("runc --version printed %q, not \"runc version X.Y.Z\"", first)
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || !allDigits(parts[0]) || !allDigits(parts[1]) {
		return 0, 0, "", fmt.Errorf("runc version %q: want X.Y.Z", v)
	}
	if major, err = strconv.Atoi(parts[0]); err != nil {
		return 0, 0, "", fmt.Errorf("runc version %q: %w", v, err)
	}
	if minor, err = strconv.Atoi(parts[1]); err != nil {
		return 0, 0, "", fmt.Errorf("runc version %q: %w", v, err)
	}
	return major, minor, v, nil
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func (c *checker) runc(ctx context.Context) {
	if c.env.Runc == nil {
		c.add("runc", Warn, "not probed")
		return
	}
	path, out, err := c.env.Runc(ctx, c.needs.RuncPath)
	field := "pods.runcPath"
	if c.needs.RuncPath == "" {
		field = "PATH (pods.runcPath is empty)"
	}
	if err != nil {
		if c.needs.Pods {
			c.add("runc", Fail, "%v (from %s); pods cannot run", err, field)
		} else {
			c.add("runc", Pass, "%v; not used: pods are off", err)
		}
		return
	}
	major, minor, full, err := ParseRuncVersion(out)
	switch {
	case err != nil:
		c.add("runc", needed(c.needs.Pods), "%s: %v", path, err)
	case major < runcMajor || (major == runcMajor && minor < runcMinor):
		c.add("runc", Warn, "%s is version %s, older than %d.%d, which Plinth is tested with", path, full, runcMajor, runcMinor)
	default:
		c.add("runc", Pass, "%s version %s", path, full)
	}
}

func (c *checker) swap() {
	devs, err := c.s.Swap()
	if err != nil {
		c.add("swap", Warn, "cannot tell whether swap is on: %v", err)
		return
	}
	total := features.SwapTotal(devs)
	limited := c.needs.SwapBehavior == config.LimitedSwap
	if total == 0 {
		if limited && c.mode != cgroup.Unified {
			c.add("swap", Warn, "off; memorySwap.swapBehavior LimitedSwap would need cgroup v2 once swap is on (this host's cgroups are %s)", c.modeWord())
			return
		}
		c.add("swap", Pass, "off")
		return
	}
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Filename
	}
	on := fmt.Sprintf("on (%d MiB on %s)", total>>20, strings.Join(names, ", "))
	if c.needs.FailSwapOn {
		c.add("swap", Fail, "%s and failSwapOn is true: turn swap off (swapoff -a, and remove it from /etc/fstab) or set failSwapOn: false", on)
		return
	}
	on += "; failSwapOn is false"
	acct := c.s.SwapAccounting(c.mode)
	switch {
	case limited && c.mode != cgroup.Unified:
		c.add("swap", needed(c.needs.Pods), "%s; memorySwap.swapBehavior LimitedSwap needs cgroup v2, this host's cgroups are %s", on, c.modeWord())
	case !acct.Available:
		c.add("swap", needed(c.needs.Pods && limited), "%s; containers' swap cannot be limited (%s), so %s cannot be applied", on, acct.Reason, c.needs.SwapBehavior)
	case limited:
		c.add("swap", Pass, "%s; LimitedSwap: Burstable containers share it in proportion to their memory requests (%s)", on, acct.Reason)
	case c.mode != cgroup.Unified:
		c.add("swap", Warn, "%s; NoSwap: containers with a memory limit get none (memsw), but cgroup v1 cannot keep containers without a memory limit off swap", on)
	default:
		c.add("swap", Pass, "%s; NoSwap: containers get none (memory.swap.max=0)", on)
	}
}

func (c *checker) modeWord() string {
	if c.mode == 0 {
		return "undetected"
	}
	return c.mode.String()
}

// sysctls checks the sysctls plinthd relies on or kubelet checks.
func (c *checker) sysctls() {
	read := func(name string) (string, bool) {
		v, err := c.s.Sysctl(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.add(name, Warn, "%v", err)
			}
			return "", false
		}
		return v, true
	}
	if v, ok := read("net.ipv4.ip_forward"); ok {
		switch {
		case v == "1":
			c.add("net.ipv4.ip_forward", Pass, "1")
		case c.needs.Pods:
			c.add("net.ipv4.ip_forward", Pass, "%s; plinthd sets it to 1 when the pod network starts", v)
		case c.needs.Proxy:
			c.add("net.ipv4.ip_forward", Warn, "%s: Service traffic from other hosts to endpoints elsewhere is not forwarded (pods are off, so plinthd does not set it)", v)
		default:
			c.add("net.ipv4.ip_forward", Pass, "%s; not used: pods and the Service proxy are off", v)
		}
	} else {
		c.add("net.ipv4.ip_forward", needed(c.needs.Pods), "no net.ipv4.ip_forward: kernel without IPv4 forwarding?")
	}
	// Bridge netfilter is not needed (pod traffic is routed), but plinthd turns it on
	// where br_netfilter is loaded, as kube-proxy expects.
	if v, ok := read("net.bridge.bridge-nf-call-iptables"); ok {
		c.add("net.bridge.bridge-nf-call-iptables", Pass, "%s; plinthd sets it to 1 with the pod network (not needed: pod traffic is routed)", v)
	} else {
		c.add("net.bridge.bridge-nf-call-iptables", Pass, "br_netfilter not loaded; not needed: pod traffic is routed, not bridged through netfilter")
	}
	if v, ok := read("vm.overcommit_memory"); ok {
		if v == "2" {
			c.add("vm.overcommit_memory", Warn, "2 (strict accounting): containers' allocations fail at the commit limit instead of being reclaimed or evicted; kubelet sets 1")
		} else {
			c.add("vm.overcommit_memory", Pass, "%s", v)
		}
	}
	if v, ok := read("vm.panic_on_oom"); ok {
		if v != "0" {
			c.add("vm.panic_on_oom", Warn, "%s: the kernel panics on out-of-memory instead of killing a process, so OOM kills and node-pressure eviction cannot save the node; kubelet wants 0", v)
		} else {
			c.add("vm.panic_on_oom", Pass, "0")
		}
	}
	if v, ok := read("kernel.pid_max"); ok {
		max, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			c.add("kernel.pid_max", Warn, "%q is not a number", v)
		case c.needs.Pods && c.needs.PodPidsLimit > 0 && int64(c.needs.MaxPods)*c.needs.PodPidsLimit > max:
			c.add("kernel.pid_max", Warn, "%d is below maxPods × pods.podPidsLimit (%d × %d): the pods together can exhaust the node's PIDs before their own limits", max, c.needs.MaxPods, c.needs.PodPidsLimit)
		default:
			c.add("kernel.pid_max", Pass, "%d", max)
		}
	}
}

// userNamespaces reports user namespaces for completeness: Plinth runs every pod in
// the host's user namespace today (spec.hostUsers: false is not supported), so their
// absence costs nothing.
func (c *checker) userNamespaces() {
	r := c.s.UserNamespaces()
	kernel := fmt.Sprintf("kernel %s", c.kernelWord())
	if c.below(6, 5) {
		kernel += ", older than the 6.5 that pods with hostUsers: false would need"
	}
	c.add("user namespaces", Pass, "%s (%s); not used: Plinth runs pods in the host's user namespace", r.Reason, kernel)
}
