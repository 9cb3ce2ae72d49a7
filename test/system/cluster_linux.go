package system

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NodeName is the name plinthd registers its Node by: the machine's hostname.
const NodeName = hostname

// Dist locates the built packages and binaries: PLINTH_DIST_DIR (make packages' dist/),
// PLINTH_BIN_DIR (make build's bin/, to build further package versions) and
// PLINTH_VERSION. make test-system sets all three.
type Dist struct {
	Dir, BinDir, Version string
}

// DistFromEnv reads Dist from the environment, failing the test when it is incomplete:
// the system tests run only through make test-system, which builds the packages first.
func DistFromEnv(t testing.TB) Dist {
	t.Helper()
	d := Dist{Dir: os.Getenv("PLINTH_DIST_DIR"), BinDir: os.Getenv("PLINTH_BIN_DIR"), Version: os.Getenv("PLINTH_VERSION")}
	if d.Dir == "" || d.BinDir == "" || d.Version == "" {
		t.Fatalf("PLINTH_DIST_DIR=%q PLINTH_BIN_DIR=%q PLINTH_VERSION=%q: run the system tests with make test-system, which builds the packages and sets these",
			d.Dir, d.BinDir, d.Version)
	}
	return d
}

// Deb returns the one .deb of package pkg in dir.
func Deb(t testing.TB, dir, pkg string) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(dir, pkg+"_*_amd64.deb"))
	if len(found) != 1 {
		t.Fatalf("want exactly one %s .deb in %s, found %v (make packages rebuilds them)", pkg, dir, found)
	}
	return found[0]
}

// BuildDeb builds package pkg as a .deb of the same binaries with package revision
// release (packaging/build.sh), in a temporary directory, and returns its path. An
// upgrade test installs one with a higher release than make packages' (1).
func (d Dist) BuildDeb(t testing.TB, pkg string, release int) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command("packaging/build.sh", d.BinDir, out, d.Version, fmt.Sprint(release))
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "PLINTH_PACKAGES="+pkg, "PLINTH_FORMATS=deb")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("packaging/build.sh: %v\n%s", err, b)
	}
	return Deb(t, out, pkg)
}

func repoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// distMount is where a machine booted by BootCluster sees the host's dist directory.
const distMount = "/dist"

// Cluster is a machine with plinth-control and plinth-node installed from their .debs
// and running: the control service as user plinth, plinthd registered with it through
// the kubeconfig plinthctl join wrote with a bootstrap token.
type Cluster struct {
	*Machine
	Dist Dist
}

// ClusterOptions adjust a cluster before plinth-node is installed.
type ClusterOptions struct {
	// PlinthdUnitDropIn, when set, is written as a drop-in for plinthd.service (such
	// as shorter watchdog timers) before the package is installed.
	PlinthdUnitDropIn string
	// PlinthdConfigDropIn, when set, is written to /etc/plinth/plinthd.d/50-systest.yaml.
	PlinthdConfigDropIn string
	// Boot adds to the machine's boot options; the dist directory is always bound.
	Boot BootOptions
	// HostRunc installs the host's runc (the pinned build scripts/install-deps.sh puts
	// in /usr/local/bin) as the machine's /usr/local/bin/runc, which plinthd's PATH
	// lookup prefers to the /usr/sbin/runc of Debian's runc package (1.1.5) that the
	// package's dependency brings. Without it the machine runs Debian's.
	HostRunc bool
}

// BootCluster boots a machine from the cached bookworm root, installs plinth-control
// and plinth-node, joins the node with a bootstrap token, and waits for both units to be
// active: plinthd's only after it sent READY=1, which it does once its Node is
// registered and its Lease heartbeating.
func BootCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	dist := DistFromEnv(t)
	root := Root(t, BookwormRoot)
	opts.Boot.BindRO = append(opts.Boot.BindRO, dist.Dir+":"+distMount)
	c := &Cluster{Machine: Boot(t, root, opts.Boot), Dist: dist}

	c.InstallDeb(t, filepath.Join(distMount, filepath.Base(Deb(t, dist.Dir, "plinth-control"))))
	c.WaitActive(t, "plinth-control.service", 60*time.Second)
	c.WaitFor(t, 60*time.Second, "plinth-control's admin kubeconfig", func() (bool, string) {
		_, err := os.Stat(c.HostPath("/var/lib/plinth-control/admin.kubeconfig"))
		return err == nil, fmt.Sprint(err)
	})
	if opts.PlinthdUnitDropIn != "" {
		c.WriteFile(t, "/etc/systemd/system/plinthd.service.d/50-systest.conf", opts.PlinthdUnitDropIn)
	}
	if opts.PlinthdConfigDropIn != "" {
		c.WriteFile(t, "/etc/plinth/plinthd.d/50-systest.yaml", opts.PlinthdConfigDropIn)
	}
	if opts.HostRunc {
		// A copy, not a bind mount of the file: runc 1.2 and later re-execute themselves
		// through a private overlayfs whose lowerdir is the binary's directory, and
		// overlayfs sees what is under a file bind mount (nspawn's empty placeholder, not
		// executable): "fork/exec /proc/self/fd/6: permission denied".
		c.CopyIn(t, HostRuncPath, "/usr/local/bin/runc")
		c.Run(t, "chmod", "0755", "/usr/local/bin/runc")
	}
	// As an operator would (packaging/README.md): install, then join. Until the
	// kubeconfig exists plinthd exits naming it and systemd restarts it.
	c.InstallDeb(t, filepath.Join(distMount, filepath.Base(Deb(t, dist.Dir, "plinth-node"))))
	join := strings.TrimSpace(c.Run(t, "plinth-control", "token", "create", "--ttl", "1h", "--print-join-command"))
	if !strings.HasPrefix(join, "plinthctl join ") {
		t.Fatalf("plinth-control token create --print-join-command printed %q, want a plinthctl join command", join)
	}
	c.Run(t, "sh", "-c", join)
	c.WaitActive(t, "plinthd.service", 90*time.Second)
	return c
}

// InstallDeb installs a .deb (a path in the machine) with apt-get, which also runs its
// maintainer scripts; its dependencies must be in the root already.
func (c *Cluster) InstallDeb(t testing.TB, path string) {
	t.Helper()
	start := time.Now()
	c.Run(t, "apt-get", "install", "-y", "-q", path)
	t.Logf("installed %s in %s", filepath.Base(path), time.Since(start).Round(100*time.Millisecond))
}

// WaitActive waits for unit to be active (for Type=notify: READY=1 received) and
// returns its properties then.
func (c *Cluster) WaitActive(t testing.TB, unit string, timeout time.Duration) Unit {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		u := c.Show(t, unit)
		switch {
		case u["ActiveState"] == "active" && u["SubState"] == "running":
			return u
		case u["ActiveState"] == "failed" || time.Now().After(deadline):
			t.Fatalf("%s not active within %s: %s/%s result %s status %q; its journal:\n%s", unit, timeout,
				u["ActiveState"], u["SubState"], u["Result"], u["StatusText"], c.Journal(unit, 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Kubectl runs kubectl in the machine as the cluster's administrator. It needs the
// host's kubectl bound in: BootOptions.BindRO with KubectlBind.
func (c *Cluster) Kubectl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return c.Exec(append([]string{kubectlInMachine, "--kubeconfig", "/var/lib/plinth-control/admin.kubeconfig"}, args...)...)
}

// HostRuncPath is the runc that scripts/install-deps.sh builds on the host.
const HostRuncPath = "/usr/local/bin/runc"

// KubectlBind binds the host's kubectl (a dispatcher with its versioned binaries beside
// it) into the machine at the same path.
const (
	KubectlBind      = "/usr/lib/google-cloud-sdk/bin"
	kubectlInMachine = "/usr/lib/google-cloud-sdk/bin/kubectl"
)

// RequireRunc fails the test unless the runc plinthd finds (the same PATH lookup,
// reported by `plinthctl check`) is the binary at path, and returns the check's reason
// (path and version).
func (c *Cluster) RequireRunc(t testing.TB, path string) string {
	t.Helper()
	out, _ := c.Exec("plinthctl", "check", "-o", "json") // non-zero when any check fails
	var report struct {
		Checks []struct{ Name, Status, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("plinthctl check -o json: %v\n%s", err, out)
	}
	for _, ch := range report.Checks {
		if ch.Name == "runc" {
			if ch.Status != "PASS" || !strings.HasPrefix(ch.Reason, path+" version ") {
				t.Fatalf("plinthctl check: runc %s %q; want PASS for %s", ch.Status, ch.Reason, path)
			}
			return ch.Reason
		}
	}
	t.Fatalf("plinthctl check -o json has no runc check:\n%s", out)
	return ""
}
