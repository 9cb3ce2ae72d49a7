//go:build system && linux

package system

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

// The shipped unit waits 30 s for a missed keep-alive, 15 s for SIGABRT to end a hung
// plinthd and 10 s before restarting it; the test shortens the three so a hang is
// detected and recovered from in seconds. The mechanism is the same.
const fastWatchdog = `[Service]
WatchdogSec=4s
TimeoutAbortSec=2s
RestartSec=1
`

// TestPackages installs plinth-control and plinth-node from their .debs into a booted
// bookworm, then walks a node through its life under systemd: READY, a pod, a hang
// the watchdog recovers from, a package upgrade that keeps the pod's processes, and a
// purge that leaves nothing behind.
func TestPackages(t *testing.T) {
	start := time.Now()
	c := BootCluster(t, ClusterOptions{
		PlinthdUnitDropIn: fastWatchdog,
		Boot:              BootOptions{WritableCgroups: true, BindRO: []string{KubectlBind}},
	})
	t.Logf("cluster up in %s", time.Since(start).Round(100*time.Millisecond))
	// The runc the package's dependency brings (Debian's 1.1.5 on bookworm).
	t.Logf("plinthd's runc: %s", c.RequireRunc(t, "/usr/sbin/runc"))

	node := c.Show(t, "plinthd.service")
	if !strings.Contains(node["StatusText"], "registered") || node["Type"] != "notify" {
		t.Fatalf("plinthd.service active with Type=%s status %q; want Type=notify and the registered status sent with READY=1",
			node["Type"], node["StatusText"])
	}
	if node["KillMode"] != "process" || node["Delegate"] != "yes" || node["Restart"] != "on-failure" {
		t.Errorf("plinthd.service KillMode=%s Delegate=%s Restart=%s; want process, yes, on-failure",
			node["KillMode"], node["Delegate"], node["Restart"])
	}
	// systemd's own check of the installed units: unknown settings, bad values, missing
	// binaries.
	if out, err := c.Exec("systemd-analyze", "verify", "plinthd.service", "plinth-control.service"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify on the installed units (%v):\n%s", err, out)
	}
	c.WaitFor(t, 60*time.Second, "the Node Ready in the API", func() (bool, string) {
		out, err := c.Kubectl(t, "get", "node", NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && out == "True", fmt.Sprintf("%v: %s", err, out)
	})
	control := c.Show(t, "plinth-control.service")
	if !strings.HasPrefix(control["StatusText"], "serving the API on") || control["Type"] != "notify" || control["WatchdogUSec"] != "30s" {
		t.Errorf("plinth-control.service active with Type=%s WatchdogUSec=%s status %q; want Type=notify, 30s and the serving status sent with READY=1",
			control["Type"], control["WatchdogUSec"], control["StatusText"])
	}
	if user := strings.TrimSpace(c.Run(t, "ps", "-o", "user=", "-p", control["MainPID"])); user != "plinth" {
		t.Errorf("plinth-control runs as %q, want the unprivileged user plinth", user)
	}

	// A pod, as a static pod from an image imported into the node's store (the
	// machine has no network to pull from).
	archive := filepath.Join(t.TempDir(), "busybox.tar")
	tag, err := name.NewTag("example.com/systest/busybox:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/sh")); err != nil {
		t.Fatal(err)
	}
	c.CopyIn(t, archive, "/root/busybox.tar")
	c.Run(t, "plinthctl", "image", "import", "--root", "/var/lib/plinth/images", "/root/busybox.tar")
	c.WriteFile(t, "/etc/plinth/manifests/sleeper.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  namespace: default
spec:
  containers:
  - name: sleeper
    image: example.com/systest/busybox:v1
    imagePullPolicy: Never
    command: ["sh", "-c", "while true; do sleep 1; done"]
`)
	var pod containerState
	c.WaitFor(t, 90*time.Second, "the static pod's container running", func() (bool, string) {
		cs, seen := c.containers(t)
		if len(cs) == 1 && cs[0].Status == "running" {
			pod = cs[0]
			return true, ""
		}
		return false, seen + "\n" + c.Journal("plinthd.service", 5)
	})
	t.Logf("pod container %s running as pid %d", pod.ID, pod.Pid)
	// runc's view is not plinthd's: the pod worker must have seen runc start return and
	// report the container running, which the mirror pod's status in the API shows.
	took := c.WaitFor(t, 60*time.Second, "the static pod Running in the API", c.podRunning(t, "sleeper"))
	t.Logf("pod Running in the API %s after runc listed its container running", took.Round(100*time.Millisecond))

	t.Run("watchdog restarts a hung plinthd", func(t *testing.T) {
		before, since := c.Show(t, "plinthd.service"), time.Now().Add(-time.Second)
		// SIGSTOP: the process is alive but sends no keep-alive, as a deadlocked main
		// loop would. systemd's SIGABRT cannot end a stopped process; the SIGKILL after
		// TimeoutAbortSec does.
		c.Run(t, "kill", "-STOP", before["MainPID"])
		var after Unit
		took := c.WaitFor(t, 60*time.Second, "plinthd restarted by the watchdog", func() (bool, string) {
			after = c.Show(t, "plinthd.service")
			return after["NRestarts"] != before["NRestarts"] && after["MainPID"] != before["MainPID"] &&
					after["MainPID"] != "0" && after["ActiveState"] == "active" && after["SubState"] == "running",
				fmt.Sprintf("NRestarts %s MainPID %s %s/%s result %s", after["NRestarts"], after["MainPID"],
					after["ActiveState"], after["SubState"], after["Result"])
		})
		t.Logf("hung plinthd (pid %s) replaced by pid %s in %s; NRestarts %s -> %s", before["MainPID"], after["MainPID"],
			took.Round(100*time.Millisecond), before["NRestarts"], after["NRestarts"])
		if j := c.JournalSince("plinthd.service", since); !strings.Contains(j, "Watchdog timeout") {
			t.Errorf("plinthd's journal does not show systemd's watchdog timeout:\n%s", tail([]byte(j), 30))
		}
		c.requireSameContainer(t, pod)
	})

	t.Run("upgrade keeps the pod running", func(t *testing.T) {
		before, since := c.Show(t, "plinthd.service"), time.Now().Add(-time.Second)
		newer := c.Dist.BuildDeb(t, "plinth-node", 2)
		c.CopyIn(t, newer, "/root/"+filepath.Base(newer))
		c.InstallDeb(t, "/root/"+filepath.Base(newer))
		if v := strings.TrimSpace(c.Run(t, "dpkg-query", "-W", "-f", "${Version}", "plinth-node")); !strings.HasSuffix(v, "-2") {
			t.Fatalf("installed plinth-node %s, want the upgrade's revision 2", v)
		}
		var after Unit
		c.WaitFor(t, 60*time.Second, "plinthd restarted by the upgrade", func() (bool, string) {
			after = c.Show(t, "plinthd.service")
			return after["MainPID"] != before["MainPID"] && after["ActiveState"] == "active" && after["SubState"] == "running",
				fmt.Sprintf("MainPID %s %s/%s", after["MainPID"], after["ActiveState"], after["SubState"])
		})
		c.requireSameContainer(t, pod)
		c.WaitFor(t, 30*time.Second, "the adopted pod still Running in the API", c.podRunning(t, "sleeper"))
		// The new plinthd adopted the container rather than leaving it orphaned: it is
		// still its pod's, so the runtime keeps reporting it.
		if j := c.JournalSince("plinthd.service", since); !strings.Contains(j, "adopted container") {
			t.Errorf("plinthd's journal after the upgrade does not show it adopting the pod's container:\n%s", tail([]byte(j), 20))
		}
	})

	t.Run("purge leaves nothing behind", func(t *testing.T) {
		start := time.Now()
		c.Run(t, "apt-get", "purge", "-y", "-q", "plinth-node", "plinth-control")
		t.Logf("purged both packages in %s", time.Since(start).Round(100*time.Millisecond))
		for _, unit := range []string{"plinthd.service", "plinth-control.service"} {
			if u := c.Show(t, unit); u["LoadState"] != "not-found" || u["ActiveState"] != "inactive" {
				t.Errorf("%s after purge: LoadState=%s ActiveState=%s; want not-found, inactive", unit, u["LoadState"], u["ActiveState"])
			}
		}
		for _, dir := range []string{"/var/lib/plinth", "/var/lib/plinth-control", "/etc/plinth", "/etc/plinth-control",
			"/run/plinth", "/var/log/pods"} {
			if out, err := c.Exec("test", "!", "-e", dir); err != nil {
				t.Errorf("%s still exists after purge %s", dir, out)
			}
		}
		if tables := c.Run(t, "nft", "list", "tables"); strings.Contains(tables, "plinth") {
			t.Errorf("nftables tables left after purge:\n%s", tables)
		}
		if out, err := c.Exec("ip", "link", "show", "plinth0"); err == nil {
			t.Errorf("the pod bridge plinth0 is left after purge:\n%s", out)
		}
		if out, err := c.Exec("ps", "-p", strconv.Itoa(pod.Pid)); err == nil {
			t.Errorf("the pod's container process %d is still running after purge:\n%s", pod.Pid, out)
		}
		if out, _ := c.Exec("sh", "-c", "ls /sys/fs/cgroup/*/plinth 2>/dev/null"); strings.TrimSpace(out) != "" {
			t.Errorf("pod cgroups left under /plinth after purge:\n%s", out)
		}
	})

	// The helpers a shutdown test needs: systemctl poweroff, then the journal read on
	// the host from the machine's files.
	t.Run("poweroff", func(t *testing.T) {
		start := time.Now()
		c.Poweroff(t, 60*time.Second)
		t.Logf("powered off in %s", time.Since(start).Round(100*time.Millisecond))
		j, err := c.HostJournal("plinthd.service")
		if err != nil || !strings.Contains(j, "Watchdog timeout") {
			t.Errorf("plinthd's journal read after poweroff (%v) lacks the watchdog timeout:\n%s", err, tail([]byte(j), 10))
		}
	})
}

// podRunning is a WaitFor condition: the static pod name's mirror pod is Running in the
// API with its one container running and ready, as plinthd's pod worker reported it.
func (c *Cluster) podRunning(t testing.TB, name string) func() (bool, string) {
	return func() (bool, string) {
		out, err := c.Kubectl(t, "get", "pod", "-n", "default", name+"-"+NodeName, "-o",
			`jsonpath={.status.phase} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].state}`)
		phase, rest, _ := strings.Cut(out, " ")
		ready, state, _ := strings.Cut(rest, " ")
		return err == nil && phase == "Running" && ready == "true" && strings.Contains(state, `"running"`),
			fmt.Sprintf("%v: %s\n%s", err, out, c.Journal("plinthd.service", 5))
	}
}

// containerState is one container as runc list --format json reports it.
type containerState struct {
	ID     string `json:"id"`
	Pid    int    `json:"pid"`
	Status string `json:"status"`
}

// containers lists the containers plinthd runs, through runc's state under plinthd's
// runtime directory.
func (c *Cluster) containers(t testing.TB) ([]containerState, string) {
	t.Helper()
	out, err := c.Exec("runc", "--root", "/run/plinth/runc", "list", "--format", "json")
	if err != nil {
		return nil, out
	}
	var cs []containerState
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		return nil, fmt.Sprintf("runc list: %v: %s", err, out)
	}
	return cs, strings.TrimSpace(out)
}

// requireSameContainer checks that the pod's container still runs with the same init
// process: plinthd's restart did not touch it.
func (c *Cluster) requireSameContainer(t testing.TB, want containerState) {
	t.Helper()
	cs, seen := c.containers(t)
	if len(cs) != 1 || cs[0].ID != want.ID || cs[0].Pid != want.Pid || cs[0].Status != "running" {
		t.Fatalf("the pod's container changed across plinthd's restart: had %+v, now %s", want, seen)
	}
	if _, err := c.Exec("kill", "-0", strconv.Itoa(want.Pid)); err != nil {
		t.Fatalf("the pod's container process %d is gone: %v", want.Pid, err)
	}
}
