package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/daemon/shutdown/logindtest"
)

// Graceful node shutdown end to end, with plinthd talking to a fake systemd-logind on a
// private D-Bus (this machine runs no systemd): plinthd takes the delay lock; on
// PrepareForShutdown(true) the Node turns Ready=False "node is shutting down" in the API,
// the regular pod (ignoring SIGTERM, its own 2 s grace shorter than the band's 10 s) and
// then the critical static pod stop and are Failed/Terminated, the state file and the
// gauges record it, the lock is released, and a new pod is refused (NodeShutdown);
// PrepareForShutdown(false) makes the Node Ready again, the lock is taken again, and a
// new pod runs.
func TestGracefulNodeShutdown(t *testing.T) {
	bus := logindtest.PrivateBus(t)
	// logind's delay already suffices, so plinthd writes no drop-in (it would go to the
	// machine's /etc/systemd).
	logind := logindtest.NewLogind(t, bus, time.Hour)
	reg := imagetest.NewRegistry(t)
	image := reg.PushBusybox(t, "e2e/busybox:v1", "/bin/sh")
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNode(t, c)
	f, err := os.OpenFile(n.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("shutdownGracePeriod: 20s\nshutdownGracePeriodCriticalPods: 10s\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	critical := strings.Replace(podManifest("critical", image, "  priorityClassName: system-node-critical\n", "",
		"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"), "  labels: {app: critical}\n", "", 1)
	if err := os.WriteFile(filepath.Join(n.manifests, "critical.yaml"), []byte(critical), 0o644); err != nil {
		t.Fatal(err)
	}
	n.proc = n.node.start(t, "DBUS_SYSTEM_BUS_ADDRESS="+bus)

	lock := waitLock(t, logind)
	if lock.What != "shutdown" || lock.Mode != "delay" || lock.Who != "plinthd" {
		t.Errorf("inhibitor lock %q/%q by %q, want a delay lock on shutdown by plinthd", lock.What, lock.Mode, lock.Who)
	}
	apply(t, c.kubeconfig, podManifest("regular", image, "  terminationGracePeriodSeconds: 2\n", "",
		"sh", "-c", "trap '' TERM; while true; do sleep 1; done"))
	for _, name := range []string{"regular", "critical-" + nodeName} {
		eventually(t, 60*time.Second, name+" Running", func() (bool, string) {
			p, seen := getPod(t, c.kubeconfig, name)
			return p.Status.Phase == "Running", seen
		})
	}

	began := time.Now()
	logind.PrepareForShutdown(true)
	eventually(t, 10*time.Second, "the Node not Ready, shutting down", func() (bool, string) {
		ready, err := kubectl(t, c.kubeconfig, "get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")]}`)
		return err == nil && strings.Contains(ready, `"status":"False"`) && strings.Contains(ready, `"message":"node is shutting down"`), ready
	})
	// plinthd held its copy of the lock before it handled the signal; once it closes
	// it, the fake sees end of file. Both bands take 2 s or so; 30 s is headroom.
	lock.AwaitReleased(t, 30*time.Second)
	t.Logf("lock released %s after PrepareForShutdown(true)", time.Since(began).Round(10*time.Millisecond))
	for _, name := range []string{"regular", "critical-" + nodeName} {
		eventually(t, 10*time.Second, name+" Failed/Terminated", func() (bool, string) {
			out, err := kubectl(t, c.kubeconfig, "get", "pod", name, "-o",
				`jsonpath={.status.phase}/{.status.reason}/{.status.conditions[?(@.type=="DisruptionTarget")].reason}`)
			return err == nil && out == "Failed/Terminated/TerminationByKubelet", out
		})
	}
	b, err := os.ReadFile(filepath.Join(n.stateDir, "graceful_node_shutdown_state"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct{ StartTime, EndTime time.Time }
	if err := json.Unmarshal(b, &state); err != nil || state.StartTime.IsZero() || state.EndTime.Before(state.StartTime) {
		t.Errorf("state file %s (%v), want a start and an end after it", b, err)
	}
	if end := gauge(t, n.healthz, "plinth_graceful_shutdown_end_time_seconds"); end != float64(state.EndTime.UnixNano())/1e9 {
		t.Errorf("plinth_graceful_shutdown_end_time_seconds %v, want the state file's end %v", end, state.EndTime)
	}
	// The regular band before the critical one, and the regular pod killed after its
	// own 2 s (it ignored SIGTERM), not the band's 10 s.
	log := readFile(t, n.proc.log)
	regular := logLineTime(t, log, `msg="pod stopped for the node's shutdown"`, " pod=default/regular ")
	crit := logLineTime(t, log, `msg="pod stopped for the node's shutdown"`, " pod=default/critical-"+nodeName+" ")
	band0 := logLineTime(t, log, `msg="stopping a priority band"`, " priority=0 ")
	if !regular.Before(crit) {
		t.Errorf("the critical pod stopped (%v) before the regular one (%v)", crit, regular)
	}
	if d := regular.Sub(band0); d < 2*time.Second || d > 10*time.Second {
		t.Errorf("the regular pod stopped %v after its band began, want its own 2 s grace (within the band's 10 s)", d)
	}

	// Bound to the node directly: the scheduler places nothing on a not-Ready node.
	apply(t, c.kubeconfig, podManifest("late", image, "  nodeName: "+nodeName+"\n", "", "sh", "-c", "sleep 1000"))
	eventually(t, 20*time.Second, "the late pod refused", func() (bool, string) {
		out, err := kubectl(t, c.kubeconfig, "get", "pod", "late", "-o", "jsonpath={.status.phase}/{.status.reason}")
		return err == nil && out == "Failed/NodeShutdown", out
	})

	// Cancelled: Ready again, a new lock, and pods admitted again.
	logind.PrepareForShutdown(false)
	again := waitLock(t, logind)
	if again == lock {
		t.Error("the lock was not taken again")
	}
	eventually(t, 10*time.Second, "the Node Ready again", func() (bool, string) {
		ready, err := kubectl(t, c.kubeconfig, "get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && ready == "True", ready
	})
	apply(t, c.kubeconfig, podManifest("after", image, "", "", "sh", "-c", "sleep 1000"))
	eventually(t, 60*time.Second, "a pod running after the cancellation", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "after")
		return p.Status.Phase == "Running", seen
	})
}

func waitLock(t *testing.T, logind *logindtest.Logind) *logindtest.Lock {
	t.Helper()
	select {
	case l := <-logind.Inhibits:
		return l
	case <-time.After(60 * time.Second):
		t.Fatal("plinthd took no inhibitor lock within 60s")
	}
	return nil
}

// gauge reads one unlabelled metric from plinthd's /metrics.
func gauge(t *testing.T, healthzPort int, metric string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", healthzPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + metric + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("%s not in /metrics", metric)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logLineTime is slog's time= of the first line of log containing every one of parts
// (a trailing space in a part matches a value whole).
func logLineTime(t *testing.T, log string, parts ...string) time.Time {
	t.Helper()
lines:
	for _, l := range strings.Split(log, "\n") {
		for _, p := range parts {
			if !strings.Contains(l+" ", p) {
				continue lines
			}
		}
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], "time=") {
			t.Fatalf("no time in %q", l)
		}
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(f[0], "time="))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	t.Fatalf("plinthd did not log a line with %q", parts)
	return time.Time{}
}
