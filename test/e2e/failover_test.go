package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/storage"
)

// The leader election timings are plinth-control's defaults, which the test keeps: the
// takeover bound is the feature. A follower counts the lease duration from when it last
// saw the record change, and looks every retry period (jittered by up to 20 %), so it
// takes over up to two retry periods after the lease duration has run from the kill.
const (
	leaderLeaseDuration = 15 * time.Second
	leaderRetryPeriod   = 2 * time.Second
	takeoverBound       = leaderLeaseDuration + 2*leaderRetryPeriod*6/5
)

// replicaMetric reads one unlabelled sample from a replica's own /metrics; "" when the
// metric is absent (a replica registers its controllers' metrics only while leading).
func replicaMetric(ctx context.Context, client kubernetes.Interface, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v, nil
		}
	}
	return "", nil
}

func leaderLease(ctx context.Context, t *testing.T, client kubernetes.Interface) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "plinth-control", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLeaderKilledOtherReplicaTakesOver runs two plinth-control processes on one etcd
// (served by the test process, so that killing a replica does not kill the store). The
// leader is killed with SIGKILL: the other replica must take over within the lease
// duration plus the follower's retry periods (takeoverBound, with headroom), and nothing the loops did may be done again: a node the old leader marked
// Unknown and tainted keeps its one NodeNotReady event and its NoExecute taint's
// timeAdded (re-tainting would restart its pods' toleration clocks). While both run,
// never do both run the control loops.
func TestLeaderKilledOtherReplicaTakesOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	etcdDir := t.TempDir()
	etcd, err := storage.StartEmbedded(ctx, etcdDir, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	flags := []string{"--etcd-servers", "unix://" + filepath.Join(etcdDir, "client.sock"),
		"--node-monitor-period", "1s", "--node-monitor-grace-period", "4s", "--node-eviction-rate", "1"}

	a := startControl(t, flags...)
	aClient := clientFor(t, a.kubeconfig)
	eventually(t, 30*time.Second, "replica A leading", func() (bool, string) {
		v, err := replicaMetric(ctx, aClient, "plinth_leader_election_master_status")
		return v == "1", fmt.Sprint(v, err)
	})
	// Replicas of one cluster share its CA: B starts on a copy of A's PKI.
	bDir := t.TempDir()
	if err := copyDir(filepath.Join(a.dataDir, "pki"), filepath.Join(bDir, "pki")); err != nil {
		t.Fatal(err)
	}
	b := startControl(t, append([]string{"--data-dir", bDir}, flags...)...)
	client := clientFor(t, b.kubeconfig) // B outlives A; everything goes through it

	// Never two leaders: sampled until A is killed.
	var sampling sync.WaitGroup
	stopSampling := make(chan struct{})
	var overlap string
	var samples int
	sampling.Go(func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(250 * time.Millisecond):
			}
			va, errA := replicaMetric(ctx, aClient, "plinth_leader_election_master_status")
			vb, errB := replicaMetric(ctx, client, "plinth_leader_election_master_status")
			if errA != nil || errB != nil {
				continue
			}
			samples++
			if va == "1" && vb == "1" && overlap == "" {
				overlap = time.Now().Format(time.RFC3339Nano)
			}
		}
	})

	// Two nodes kept by the test: "alive" renews its Lease every second, "silent"
	// never does. (One silent node alone would be a fully disrupted cluster, where
	// nothing is tainted NoExecute.)
	for _, name := range []string{"e2e-alive", "e2e-silent"} {
		createPostedNode(ctx, t, client, name)
	}
	var renewing sync.WaitGroup
	stopRenewing := make(chan struct{})
	defer func() { close(stopRenewing); renewing.Wait() }()
	renewing.Go(func() {
		for {
			renewNodeLease(ctx, client, "e2e-alive")
			select {
			case <-stopRenewing:
				return
			case <-time.After(time.Second):
			}
		}
	})

	var taintAdded metav1.Time
	eventually(t, 30*time.Second, "replica A marks e2e-silent Unknown and taints it NoExecute", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, "e2e-silent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		taint := nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
		if taint == nil || taint.TimeAdded == nil {
			return false, fmt.Sprintf("taints %+v", n.Spec.Taints)
		}
		taintAdded = *taint.TimeAdded
		return true, ""
	})
	if got := notReadyEvents(ctx, t, client, "e2e-silent"); got != 1 {
		t.Fatalf("NodeNotReady events for e2e-silent under replica A: %d, want 1", got)
	}
	if v, _ := replicaMetric(ctx, client, "plinth_nodelifecycle_nodes"); v != "" {
		t.Fatalf("replica B, not leading, runs the node lifecycle controller (plinth_nodelifecycle_nodes %s)", v)
	}

	before := leaderLease(ctx, t, client)
	close(stopSampling)
	sampling.Wait()
	if overlap != "" {
		t.Fatalf("both replicas ran the control loops at %s", overlap)
	}
	if samples == 0 {
		t.Fatal("no sample of both replicas' leadership was taken")
	}
	a.control.kill(syscall.SIGKILL)
	took := eventually(t, takeoverBound+10*time.Second, "replica B leading", func() (bool, string) {
		v, err := replicaMetric(ctx, client, "plinth_leader_election_master_status")
		return v == "1", fmt.Sprint(v, err)
	})
	t.Logf("replica B leads %s after replica A was killed (lease duration %s, bound %s); %d leadership samples before, never both",
		took.Round(100*time.Millisecond), leaderLeaseDuration, takeoverBound, samples)
	after := leaderLease(ctx, t, client)
	if *after.Spec.HolderIdentity == *before.Spec.HolderIdentity {
		t.Fatalf("leader Lease still held by %s", *after.Spec.HolderIdentity)
	}
	if got, want := ptrValue(after.Spec.LeaseTransitions), ptrValue(before.Spec.LeaseTransitions)+1; got != want {
		t.Fatalf("leaseTransitions %d, want %d (one handover)", got, want)
	}

	// B's controller gives every node a fresh grace period (4 s), then finds e2e-silent
	// silent itself; let it get there and a few monitor periods more.
	time.Sleep(8 * time.Second)
	eventually(t, 10*time.Second, "replica B tracking both nodes", func() (bool, string) {
		v, err := replicaMetric(ctx, client, "plinth_nodelifecycle_nodes")
		return v == "2", fmt.Sprint(v, err)
	})
	time.Sleep(5 * time.Second)
	n, err := client.CoreV1().Nodes().Get(ctx, "e2e-silent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	taint := nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	if taint == nil || taint.TimeAdded == nil || !taint.TimeAdded.Equal(&taintAdded) {
		t.Fatalf("after the handover e2e-silent's NoExecute taint is %+v, want the old leader's, added %s", taint, taintAdded)
	}
	if got := notReadyEvents(ctx, t, client, "e2e-silent"); got != 1 {
		t.Fatalf("NodeNotReady events for e2e-silent after the handover: %d, want still 1", got)
	}
	alive, err := client.CoreV1().Nodes().Get(ctx, "e2e-alive", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := findCondition(alive, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue || len(alive.Spec.Taints) != 0 {
		t.Fatalf("e2e-alive after the handover: Ready %+v, taints %+v; want Ready and untainted", r, alive.Spec.Taints)
	}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// createPostedNode creates a Node that has posted Ready=True, as a node agent would.
func createPostedNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "E2EReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	renewNodeLease(ctx, client, name)
}

// renewNodeLease creates or renews the node's Lease; failures are left to the next call.
func renewNodeLease(ctx context.Context, client kubernetes.Interface, name string) {
	leases := client.CoordinationV1().Leases("kube-node-lease")
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		_, _ = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &now}}, metav1.CreateOptions{})
		return
	}
	l.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// notReadyEvents counts NodeNotReady occurrences (events and their repeat counts) for
// the node.
func notReadyEvents(ctx context.Context, t *testing.T, client kubernetes.Interface, node string) int32 {
	t.Helper()
	list, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range list.Items {
		if e.Reason == "NodeNotReady" && e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node {
			n += max(e.Count, 1)
		}
	}
	return n
}

// copyDir copies the regular files of src into a new directory dst, keeping modes.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
