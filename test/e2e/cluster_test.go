package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	nodeName = "e2e-node"
	// Shortened node health timings, so the test sees a dead node quickly.
	monitorPeriod = time.Second
	gracePeriod   = 6 * time.Second
)

// plinthdConfig writes a config file with fast heartbeats (a 4 s lease renewed every
// second) and the node API on a free loopback port (never the shared :10250), and
// returns its path.
func plinthdConfig(t *testing.T, healthzPort int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plinthd.yaml")
	// The Service proxy and the pod runtime stay off: they would program nftables and
	// a bridge in the machine's own network namespace (pod tests use newPodNode, whose
	// pod network lives in a namespace of its own).
	cfg := fmt.Sprintf("nodeLeaseDurationSeconds: 4\nnodeStatusUpdateFrequency: 1s\nhealthzBindAddress: 127.0.0.1:%d\nnodeAPIBindAddress: 127.0.0.1:%d\nnodeLabels:\n  node-role.kubernetes.io/worker: \"\"\nproxy:\n  enabled: false\npods:\n  enabled: false\n", healthzPort, freePort(t))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type node struct {
	kubeconfig, config, lockFile, stateDir string
	healthz                                int
}

func newNode(t *testing.T, c *cluster) *node {
	port := freePort(t)
	dir := t.TempDir()
	return &node{
		kubeconfig: c.nodeKubeconfig(t, nodeName),
		config:     plinthdConfig(t, port),
		lockFile:   filepath.Join(dir, "plinthd.lock"),
		stateDir:   filepath.Join(dir, "state"),
		healthz:    port,
	}
}

func (n *node) start(t *testing.T, env ...string) *process {
	return start(t, "plinthd", env, "--config", n.config, "--config-dir", "", "--kubeconfig", n.kubeconfig,
		"--hostname-override", nodeName, "--lock-file", n.lockFile, "--state-dir", n.stateDir)
}

// kubectlNodeRow returns kubectl get nodes' header and the row of our node.
func kubectlNodeRow(t *testing.T, kubeconfig string) (header, row []string, err error) {
	out, err := kubectl(t, kubeconfig, "get", "nodes")
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header = strings.Fields(lines[0])
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == nodeName {
			return header, f, nil
		}
	}
	return header, nil, fmt.Errorf("node %s not listed:\n%s", nodeName, out)
}

func waitNodeStatus(t *testing.T, c *cluster, want string, timeout time.Duration) time.Duration {
	t.Helper()
	return eventually(t, timeout, "kubectl get nodes shows "+want, func() (bool, string) {
		_, row, err := kubectlNodeRow(t, c.kubeconfig)
		if err != nil {
			return false, err.Error()
		}
		return row[1] == want, strings.Join(row, " ")
	})
}

func TestOneNodeCluster(t *testing.T) {
	c := startControl(t, "--node-monitor-period", monitorPeriod.String(),
		"--node-monitor-grace-period", gracePeriod.String(), "--node-startup-grace-period", "8s")
	n := newNode(t, c)
	notify := newNotifySocket(t)
	// WatchdogSec=2s: plinthd must ping every second.
	first := n.start(t, "NOTIFY_SOCKET="+notify.path, "WATCHDOG_USEC=2000000")

	eventually(t, 30*time.Second, "READY=1 from plinthd", func() (bool, string) {
		return len(notify.with("READY=1")) > 0, fmt.Sprint(notify.all())
	})
	waitNodeStatus(t, c, "Ready", 30*time.Second)
	ctx := context.Background()
	client := clientFor(t, c.kubeconfig)
	registered, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kubectl get nodes prints Kubernetes' columns", func(t *testing.T) {
		header, row, err := kubectlNodeRow(t, c.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(header, " ") != "NAME STATUS ROLES AGE VERSION" {
			t.Fatalf("header %q", header)
		}
		if len(row) != 5 || row[1] != "Ready" || row[2] != "worker" || !strings.HasPrefix(row[4], "v") || row[3] == "<unknown>" {
			t.Fatalf("row %q: want Ready, role worker, an age and a version", row)
		}
		if row[4] != registered.Status.NodeInfo.KubeletVersion {
			t.Fatalf("VERSION %s, node reports %s", row[4], registered.Status.NodeInfo.KubeletVersion)
		}
	})

	t.Run("the Lease renews", func(t *testing.T) {
		out, err := kubectl(t, c.kubeconfig, "get", "leases", "-n", "kube-node-lease")
		if err != nil || !strings.Contains(out, "HOLDER") || !strings.Contains(out, nodeName+"   "+nodeName) {
			t.Fatalf("kubectl get leases: %v\n%s", err, out)
		}
		renewTime := func() string {
			out, err := kubectl(t, c.kubeconfig, "get", "lease", "-n", "kube-node-lease", nodeName, "-o", "jsonpath={.spec.renewTime}")
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := renewTime()
		eventually(t, 10*time.Second, "renewTime advances", func() (bool, string) {
			now := renewTime()
			return now != before && now != "", before + " -> " + now
		})
		lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != registered.UID || *lease.Spec.LeaseDurationSeconds != 4 {
			t.Fatalf("lease owner %+v duration %v: want the Node as owner and 4 s", lease.OwnerReferences, *lease.Spec.LeaseDurationSeconds)
		}
	})

	t.Run("watchdog pings at half the watchdog period", func(t *testing.T) {
		since := time.Now()
		time.Sleep(4500 * time.Millisecond)
		var at []time.Time
		for _, m := range notify.with("WATCHDOG=1") {
			if m.at.After(since) {
				at = append(at, m.at)
			}
		}
		if len(at) < 3 {
			t.Fatalf("%d WATCHDOG=1 pings in 4.5 s, want at least 3", len(at))
		}
		for i := 1; i < len(at); i++ {
			// systemd kills at 2 s without a ping; the gap must stay well inside it.
			if gap := at[i].Sub(at[i-1]); gap > 1700*time.Millisecond {
				t.Fatalf("gap of %s between pings, want about 1 s", gap)
			}
		}
	})

	t.Run("a second plinthd on the same lock refuses to start", func(t *testing.T) {
		second := n.start(t)
		select {
		case <-second.done:
		case <-time.After(15 * time.Second):
			t.Fatal("second plinthd still running")
		}
		var exitErr *exec.ExitError
		if !errors.As(second.err, &exitErr) || exitErr.ExitCode() == 0 {
			t.Fatalf("second plinthd exit: %v, want non-zero", second.err)
		}
		msg := tail(second.log, 5)
		want := fmt.Sprintf("held by another plinthd (pid %d)", first.cmd.Process.Pid)
		if !strings.Contains(msg, want) {
			t.Fatalf("second plinthd said %q, want it to contain %q", msg, want)
		}
	})

	t.Run("request without a client certificate is refused", func(t *testing.T) {
		pool := x509.NewCertPool()
		ca, err := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
		if err != nil || !pool.AppendCertsFromPEM(ca) {
			t.Fatalf("reading CA: %v", err)
		}
		// The TLS layer lets clients without a certificate in (bootstrap tokens need
		// that); the API must then refuse them.
		anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		for _, path := range []string{"/api/v1/nodes", "/version", "/metrics", "/apis/plinth.dev/v1/bootstraptokens"} {
			resp, err := anon.Get(c.server + path)
			if err != nil {
				t.Fatalf("anonymous GET %s: %v", path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("anonymous GET %s answered %s, want 401 Unauthorized", path, resp.Status)
			}
		}
		// Except health, which load balancers probe without credentials.
		resp, err := anon.Get(c.server + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("anonymous GET /readyz answered %s, want 200", resp.Status)
		}
	})

	t.Run("a stale update is a conflict", func(t *testing.T) {
		cur, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Someone else writes first...
		if _, err := kubectl(t, c.kubeconfig, "label", "node", nodeName, "e2e=first"); err != nil {
			t.Fatal(err)
		}
		// ...so an update from the copy read before that is stale.
		stale := cur.DeepCopy()
		stale.Labels["e2e"] = "stale"
		_, err = client.CoreV1().Nodes().Update(ctx, stale, metav1.UpdateOptions{})
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != http.StatusConflict {
			t.Fatalf("stale update: %v, want HTTP 409", err)
		}
		got, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil || got.Labels["e2e"] != "first" {
			t.Fatalf("after the refused update the label is %q (%v), want first", got.Labels["e2e"], err)
		}
	})

	t.Run("a failing health check stops the watchdog pings", func(t *testing.T) {
		// Removing the lock file makes plinthd's node-lock check fail: a second daemon
		// could now start, so systemd should restart this one.
		if err := os.Remove(n.lockFile); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "/healthz fails naming node-lock", func() (bool, string) {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthz))
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			body := make([]byte, 512)
			k, _ := resp.Body.Read(body)
			return resp.StatusCode == 500 && strings.Contains(string(body[:k]), "node-lock"), resp.Status
		})
		// A ping already being sent may still land; none may come after that.
		time.Sleep(1500 * time.Millisecond)
		quiet := time.Now()
		time.Sleep(3 * time.Second)
		for _, m := range notify.with("WATCHDOG=1") {
			if m.at.After(quiet) {
				t.Fatalf("WATCHDOG=1 at %s while the node-lock check fails", m.at.Format(time.RFC3339Nano))
			}
		}
	})

	t.Run("SIGTERM sends STOPPING and exits cleanly", func(t *testing.T) {
		first.kill(syscall.SIGTERM)
		if first.err != nil {
			t.Fatalf("plinthd exit after SIGTERM: %v", first.err)
		}
		if len(notify.with("STOPPING=1")) == 0 {
			t.Fatalf("no STOPPING=1; got %q", notify.all())
		}
	})

	t.Run("kill -9 turns the node Unknown within grace plus a monitor period", func(t *testing.T) {
		n.lockFile = filepath.Join(t.TempDir(), "plinthd.lock")
		p := n.start(t)
		waitNodeStatus(t, c, "Ready", 30*time.Second)
		p.kill(syscall.SIGKILL)
		killed := time.Now()
		waitNodeStatus(t, c, "Unknown", gracePeriod+monitorPeriod+15*time.Second)
		took := time.Since(killed)
		got, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			cond := findCondition(got, typ)
			if cond == nil || cond.Status != corev1.ConditionUnknown || cond.Reason != "NodeStatusUnknown" {
				t.Fatalf("condition %s = %+v, want Unknown with reason NodeStatusUnknown", typ, cond)
			}
		}
		t.Logf("node Unknown %s after kill -9 (grace %s, monitor period %s)", took.Round(100*time.Millisecond), gracePeriod, monitorPeriod)

		restarted := n.start(t)
		waitNodeStatus(t, c, "Ready", 30*time.Second)
		again, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again.UID != registered.UID {
			t.Fatalf("restart re-created the Node: UID %s, was %s", again.UID, registered.UID)
		}
		restarted.kill(syscall.SIGTERM)
	})
}

func findCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
