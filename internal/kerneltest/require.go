package kerneltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/plinth/plinth/kernel/features"
)

// Feature is one thing a kernel test needs from the machine. Probe reports nil when the
// feature is present, or an error saying what is missing.
type Feature struct {
	Name  string
	Probe func() error
}

// RequireEnv is the environment variable that turns a missing feature into a failure.
const RequireEnv = "PLINTH_REQUIRE_KERNEL"

var (
	// Root needs uid 0: kernel tests create namespaces, cgroups and BPF objects.
	Root = Feature{Name: "root", Probe: func() error {
		if os.Geteuid() != 0 {
			return fmt.Errorf("running as uid %d, not root", os.Geteuid())
		}
		return nil
	}}
	// NetNS needs network namespaces (CONFIG_NET_NS).
	NetNS = Feature{Name: "netns", Probe: func() error { return statAll("/proc/self/ns/net") }}
	// PSI needs pressure stall information enabled (present and not disabled at boot).
	PSI = Feature{Name: "psi", Probe: hostResult((*features.System).PSI)}
	// Runc needs the runc binary in PATH (scripts/install-deps.sh builds the pinned one).
	Runc = Feature{Name: "runc", Probe: func() error {
		if _, err := exec.LookPath("runc"); err != nil {
			return fmt.Errorf("no runc in PATH (scripts/install-deps.sh installs it): %w", err)
		}
		return nil
	}}
	// Seccomp needs seccomp filters (CONFIG_SECCOMP_FILTER) with the ERRNO and ALLOW
	// actions; the kernel lists the actions it supports in actions_avail.
	Seccomp = Feature{Name: "seccomp", Probe: hostResult((*features.System).Seccomp)}
	// BTF needs kernel type information for CO-RE.
	BTF = Feature{Name: "btf", Probe: hostResult((*features.System).BTF)}
	// RingBuffer needs BPF ring buffers (one is created and freed).
	RingBuffer = Feature{Name: "ringbuf", Probe: hostResult((*features.System).RingBuffer)}
)

// hostResult turns a probe of kernel/features into a Feature's probe on the running
// system, so a test skips for exactly the reason plinthctl check would report.
func hostResult(probe func(*features.System) features.Result) func() error {
	return func() error {
		if r := probe(features.HostSystem()); !r.Available {
			return errors.New(r.Reason)
		}
		return nil
	}
}

func statAll(paths ...string) error {
	var errs []error
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Require checks every feature and, when one is missing, skips the test naming it, or
// fails the test when PLINTH_REQUIRE_KERNEL=1.
func Require(t testing.TB, features ...Feature) {
	t.Helper()
	var missing []string
	for _, f := range features {
		if err := f.Probe(); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", f.Name, err))
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "kernel test needs: " + strings.Join(missing, "; ")
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1 forbids skipping", msg, RequireEnv)
	}
	t.Skip(msg)
}
