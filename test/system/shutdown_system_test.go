//go:build system && linux

package system

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

// Three priority bands, 16 s in all: more than logind's default InhibitDelayMaxSec (5 s),
// so plinthd must raise it through its drop-in.
const shutdownBands = `shutdownGracePeriodByPodPriority:
- {priority: 0, shutdownGracePeriodSeconds: 6}
- {priority: 100000, shutdownGracePeriodSeconds: 6}
- {priority: 2000000000, shutdownGracePeriodSeconds: 4}
`

// The pods, one per band: "low" exits a second after SIGTERM, "mid" (priority 100000, a
// 3 s grace period of its own) ignores SIGTERM, "critical" (system-node-critical) exits
// at once.
var shutdownPods = map[string]string{
	"low":      `trap 'sleep 1; exit 0' TERM; echo started; while true; do sleep 0.2; done`,
	"mid":      `trap '' TERM; echo started; while true; do sleep 0.2; done`,
	"critical": `trap 'exit 0' TERM; echo started; while true; do sleep 0.2; done`,
}

// TestGracefulShutdownOnPoweroff: with shutdown grace periods configured, plinthd holds
// a logind delay inhibitor lock; `systemctl poweroff` then marks the Node not Ready in
// the API, stops the pods band by band (lowest priority first, each band within its
// time), records the state file, and releases the lock so the machine powers off.
func TestGracefulShutdownOnPoweroff(t *testing.T) {
	start := time.Now()
	c := BootCluster(t, ClusterOptions{
		PlinthdConfigDropIn: shutdownBands,
		// plinthd, started by the package before the join, exits until its kubeconfig
		// exists; retry after 1 s rather than the shipped 10 s.
		PlinthdUnitDropIn: "[Service]\nRestartSec=1\n",
		Boot:              BootOptions{WritableCgroups: true, BindRO: []string{KubectlBind}},
		// TestPackages runs the pods with Debian's runc; this test with the pinned one.
		HostRunc: true,
	})
	t.Logf("cluster up in %s", time.Since(start).Round(100*time.Millisecond))
	t.Logf("plinthd's runc: %s", c.RequireRunc(t, "/usr/local/bin/runc"))

	// The lock, and logind's delay raised to the bands' 16 s.
	c.WaitFor(t, 30*time.Second, "plinthd's shutdown delay lock in systemd-inhibit --list", func() (bool, string) {
		out, _ := c.Exec("systemd-inhibit", "--list", "--no-legend")
		return regexp.MustCompile(`(?m)^plinthd\s.*\sshutdown\s.*\sdelay\s*$`).MatchString(out), out
	})
	if out := c.Run(t, "busctl", "get-property", "org.freedesktop.login1", "/org/freedesktop/login1",
		"org.freedesktop.login1.Manager", "InhibitDelayMaxUSec"); strings.TrimSpace(out) != "t 16000000" {
		t.Errorf("logind's InhibitDelayMaxUSec = %q, want t 16000000 (16 s, from plinthd's drop-in)", strings.TrimSpace(out))
	}
	if dropIn := c.Run(t, "cat", "/etc/systemd/logind.conf.d/99-plinth-shutdown.conf"); !strings.Contains(dropIn, "InhibitDelayMaxSec=16") {
		t.Errorf("plinthd's logind drop-in:\n%s", dropIn)
	}

	importSystestBusybox(t, c)
	// Static pods: they run from files without the scheduler. (Their Failed/Terminated
	// status in the API is the end-to-end test's to check: TestGracefulNodeShutdown.)
	for _, pod := range []string{"low", "mid", "critical"} {
		extra := ""
		switch pod {
		case "mid":
			extra = "\n  priority: 100000\n  terminationGracePeriodSeconds: 3"
		case "critical":
			extra = "\n  priorityClassName: system-node-critical"
		}
		c.WriteFile(t, "/etc/plinth/manifests/"+pod+".yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:%s
  containers:
  - name: main
    image: example.com/systest/busybox:v1
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
`, pod, extra, shutdownPods[pod]))
	}
	// Started for real: each has run its first command (its CRI log says so).
	c.WaitFor(t, 90*time.Second, "the three pods' containers started", func() (bool, string) {
		out, _ := c.Exec("sh", "-c", "grep -l started /var/log/pods/default_*/main/0.log")
		cs, seen := c.containers(t)
		return strings.Count(out, "0.log") == 3, fmt.Sprintf("logs with started: %q; containers: %s (%d)\n%s", out, seen, len(cs),
			c.Journal("plinthd.service", 10))
	})
	for _, pod := range []string{"low", "mid", "critical"} {
		c.WaitFor(t, 30*time.Second, pod+" Running in the API", c.podRunning(t, pod))
	}

	// systemctl poweroff goes through logind, which holds the shutdown back for the lock.
	c.StartPoweroff(t)
	shutdownBegan := time.Now()
	var readyCond string
	c.WaitFor(t, 10*time.Second, "the Node not Ready in the API while the pods stop", func() (bool, string) {
		ready, _ := c.Kubectl(t, "get", "node", NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")]}`)
		readyCond = ready
		return strings.Contains(ready, `"status":"False"`) && strings.Contains(ready, "node is shutting down"), ready
	})
	t.Logf("Ready condition while shutting down: %s", readyCond)
	c.WaitHalted(t, 60*time.Second)
	t.Logf("machine powered off %s after systemctl poweroff", time.Since(shutdownBegan).Round(100*time.Millisecond))

	// The state file and plinthd's journal, read from the powered-off machine's disk.
	b, err := os.ReadFile(c.HostPath("/var/lib/plinth/graceful_node_shutdown_state"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct{ StartTime, EndTime time.Time }
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatalf("state file %s: %v", b, err)
	}
	if took := state.EndTime.Sub(state.StartTime); state.StartTime.IsZero() || took <= 0 || took > 16*time.Second {
		t.Errorf("state file %s: the shutdown took %v, want an end within the bands' 16 s", b, took)
	}
	journal, err := c.HostJournal("plinthd.service")
	if err != nil {
		t.Fatalf("plinthd's journal after the poweroff: %v\n%s", err, journal)
	}
	events := shutdownEvents(journal)
	t.Logf("shutdown as plinthd logged it:\n%s", events)
	bandStart := func(p string) time.Time { return events.at(t, `msg="stopping a priority band"`, " priority="+p+" ") }
	stopped := func(pod string) time.Time {
		return events.at(t, `msg="pod stopped for the node's shutdown"`, " pod=default/"+pod+"-"+NodeName+" ")
	}
	low, mid, critical := stopped("low"), stopped("mid"), stopped("critical")
	b0, b1, b2 := bandStart("0"), bandStart("100000"), bandStart("2000000000")
	if !(b0.Before(low) && !low.After(b1) && b1.Before(mid) && !mid.After(b2) && b2.Before(critical)) {
		t.Errorf("bands out of order: band 0 at %v, low stopped %v, band 100000 at %v, mid stopped %v, band 2000000000 at %v, critical stopped %v",
			b0, low, b1, mid, b2, critical)
	}
	// Each pod within its band's time, and no sooner than its own handling of SIGTERM
	// allows: "low" exits a second after it, "mid" ignores it and is killed only after
	// its own 3 s grace period, within its band's 6 s.
	for _, w := range []struct {
		pod          string
		band, done   time.Time
		least, limit time.Duration
	}{{"low", b0, low, time.Second, 6 * time.Second}, {"mid", b1, mid, 3 * time.Second, 6 * time.Second},
		{"critical", b2, critical, 0, 4 * time.Second}} {
		if d := w.done.Sub(w.band); d > w.limit {
			t.Errorf("%s stopped %v after its band began, beyond the band's %v", w.pod, d, w.limit)
		} else if d < w.least {
			t.Errorf("%s stopped %v after its band began, sooner than the %v its SIGTERM handling takes", w.pod, d, w.least)
		}
	}
	if !strings.Contains(journal, "released the inhibitor lock") {
		t.Error("plinthd's journal does not show the lock released")
	}
}

// importSystestBusybox puts the busybox test image into the node's store (the machine has no
// network to pull from).
func importSystestBusybox(t *testing.T, c *Cluster) {
	t.Helper()
	archive := t.TempDir() + "/busybox.tar"
	tag, err := name.NewTag("example.com/systest/busybox:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/sh")); err != nil {
		t.Fatal(err)
	}
	c.CopyIn(t, archive, "/root/busybox.tar")
	c.Run(t, "plinthctl", "image", "import", "--root", "/var/lib/plinth/images", "/root/busybox.tar")
}

// shutdownLog is plinthd's journal lines about the shutdown.
type shutdownLog []string

func shutdownEvents(journal string) shutdownLog {
	var out shutdownLog
	for _, l := range strings.Split(journal, "\n") {
		if strings.Contains(l, "priority band") || strings.Contains(l, "for the node's shutdown") ||
			strings.Contains(l, "announced a shutdown") || strings.Contains(l, "inhibitor lock") {
			out = append(out, l)
		}
	}
	return out
}

func (s shutdownLog) String() string { return strings.Join(s, "\n") }

var slogTime = regexp.MustCompile(`^time=(\S+) `)

// at is the time of the first line containing every one of parts (a trailing space in a
// part matches a value whole), from slog's time= field.
func (s shutdownLog) at(t *testing.T, parts ...string) time.Time {
	t.Helper()
lines:
	for _, l := range s {
		for _, p := range parts {
			if !strings.Contains(l+" ", p) {
				continue lines
			}
		}
		m := slogTime.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("no time in %q", l)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	t.Fatalf("plinthd logged no line with %q:\n%s", parts, s)
	return time.Time{}
}
