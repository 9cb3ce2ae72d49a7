//go:build linux

package preflight_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/preflight"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
	"github.com/plinth/plinth/kernel/features"
	"github.com/plinth/plinth/kernel/seccomp"
)

// TestHostPreflight runs every check against this machine as a node with pods and the
// Service proxy would: with the features its kernel tests need present, nothing fails,
// and the swap verdict follows /proc/swaps.
func TestHostPreflight(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NFTables, kerneltest.Runc, kerneltest.Seccomp, cgrouptest.Cgroups)
	cfg := config.Defaults()
	cfg.Kubeconfig = "/etc/plinth/kubeconfig"
	cfg.FailSwapOn = false
	r := preflight.Run(context.Background(), preflight.HostEnv(), preflight.NeedsOf(cfg))
	t.Logf("preflight:\n%s", r)
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	status := map[string]preflight.Check{}
	for _, c := range r.Checks {
		status[c.Name] = c
	}
	for _, name := range []string{"kernel", "nftables", "runc", "seccomp", "cgroup mode", "cgroup controllers"} {
		if c := status[name]; c.Status != preflight.Pass {
			t.Errorf("%s: %s %s", name, c.Status, c.Reason)
		}
	}
	// libseccomp is there exactly when this binary links it (cgo).
	wantLib := preflight.Pass
	if _, err := seccomp.Probe(); err != nil {
		wantLib = preflight.Warn
	}
	if c := status["libseccomp"]; c.Status != wantLib {
		t.Errorf("libseccomp: %s %s, want %s", c.Status, c.Reason, wantLib)
	}
	devs, err := features.HostSystem().Swap()
	if err != nil {
		t.Fatal(err)
	}
	if on := len(devs) > 0; on != strings.HasPrefix(status["swap"].Reason, "on (") {
		t.Errorf("swap check %+v, /proc/swaps lists %d areas", status["swap"], len(devs))
	}
	// The same machine with failSwapOn fails exactly when swap is on.
	cfg.FailSwapOn = true
	r = preflight.Run(context.Background(), preflight.HostEnv(), preflight.NeedsOf(cfg))
	failed := r.Failed()
	if (len(devs) > 0) != (len(failed) == 1 && failed[0].Name == "swap") || (len(devs) == 0 && len(failed) != 0) {
		t.Errorf("failSwapOn with %d swap areas: failed %+v", len(devs), failed)
	}
}
