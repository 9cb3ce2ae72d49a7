package nodesim

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// waitFor polls cond in real time: the agents talk to a real API server, so their
// requests take real time even though their timers run on the fake clock.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s; last seen: %s", what, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waiters(clk *testingclock.FakeClock, want int) func() (bool, string) {
	return func() (bool, string) {
		got := clk.Waiters()
		return got == want, fmt.Sprintf("%d timers waiting, want %d", got, want)
	}
}

func TestNodesRegisterHeartbeatAndStopAtAHeartbeat(t *testing.T) {
	api := apitest.Start(t, apitest.Options{})
	clk := testingclock.NewFakeClock(t0)
	sim, err := New(Options{Credentials: SharedConfig(api.RESTConfig()), StartSpread: time.Second, Clock: clk, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes, err := sim.Start(ctx, "sim-0", "sim-1", "sim-2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	waitFor(t, "every node waits for its start", waiters(clk, 3))
	clk.Step(time.Second)
	// Registered, Lease created, status posted; then each node's lease and status
	// loops wait for their next period.
	waitFor(t, "every node registered and waiting", waiters(clk, 6))

	leases := api.Client.CoordinationV1().Leases("kube-node-lease")
	for i, n := range nodes {
		got, err := api.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := false
		for _, c := range got.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		wantIP := fmt.Sprintf("10.128.0.%d", i+1)
		if !ready || len(got.Status.Addresses) == 0 || got.Status.Addresses[0].Address != wantIP {
			t.Errorf("node %s: conditions %+v addresses %+v; want Ready and InternalIP %s", n.Name, got.Status.Conditions, got.Status.Addresses, wantIP)
		}
		if n.LastHeartbeat().IsZero() {
			t.Errorf("node %s: no heartbeat recorded", n.Name)
		}
	}

	nodes[0].StopAtNextHeartbeat()
	clk.Step(10 * time.Second)
	renewed := clk.Now()
	select {
	case <-nodes[0].Done():
	case <-time.After(30 * time.Second):
		t.Fatal("sim-0 did not stop at its heartbeat")
	}
	if got := nodes[0].StoppedAt(); !got.Equal(renewed) || !nodes[0].LastHeartbeat().Equal(renewed) {
		t.Fatalf("sim-0 stopped at %s, last heartbeat %s; want both at the renewal, %s", got, nodes[0].LastHeartbeat(), renewed)
	}
	waitFor(t, "the two running nodes waiting again", waiters(clk, 4))

	clk.Step(10 * time.Second)
	waitFor(t, "the two running nodes renewed again", waiters(clk, 4))
	for _, n := range nodes {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := clk.Now()
		if n == nodes[0] {
			want = renewed
		}
		if got := l.Spec.RenewTime.Time; !got.Equal(want) {
			t.Errorf("lease %s renewTime %s, want %s", n.Name, got.UTC(), want)
		}
	}
	// Stop ends a node at once, between heartbeats.
	stoppedAt := nodes[1].Stop()
	select {
	case <-nodes[1].Done():
	default:
		t.Fatal("sim-1: Stop returned before the node's agent did")
	}
	if !stoppedAt.Equal(clk.Now()) || nodes[1].LastHeartbeat().After(stoppedAt) {
		t.Errorf("sim-1 stopped at %s (last heartbeat %s), want the clock's now %s", stoppedAt, nodes[1].LastHeartbeat(), clk.Now())
	}
	waitFor(t, "only sim-2 still waiting", waiters(clk, 2))

	sum := sim.Recorder().Summary(LeaseUpdate)
	// Two rounds from three nodes, then one from two. (Latencies are measured on the
	// fake clock here, so they are zero.)
	if sum.Count != 5 || sum.Failures != 0 {
		t.Errorf("lease updates recorded: %+v, want 5 without failures", sum)
	}
	if s := sim.Recorder().Summary(NodeCreate); s.Count != 3 {
		t.Errorf("node creates recorded: %+v, want 3", s)
	}
}

func TestStartRefusesARunningName(t *testing.T) {
	api := apitest.Start(t, apitest.Options{})
	sim, err := New(Options{Credentials: SharedConfig(api.RESTConfig()), StartSpread: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	if _, err := sim.Start(context.Background(), "sim-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Start(context.Background(), "sim-b", "sim-a"); err == nil {
		t.Fatal("starting sim-a twice succeeded")
	}
	if sim.Node("sim-b") != nil {
		t.Fatal("sim-b started although its batch failed")
	}
	if _, err := sim.Start(context.Background(), "Not_A_Name"); err == nil {
		t.Fatal("an invalid Node name started")
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         RequestKind
	}{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", LeaseUpdate},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", LeaseGet},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", LeaseCreate},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/n1", OtherRequest},
		{"POST", "/api/v1/nodes", NodeCreate},
		{"GET", "/api/v1/nodes/n1", NodeGet},
		{"PUT", "/api/v1/nodes/n1", NodeUpdate},
		{"PUT", "/api/v1/nodes/n1/status", NodeStatusUpdate},
		{"PATCH", "/api/v1/nodes/n1/status", OtherRequest},
		{"GET", "/api/v1/nodes", OtherRequest},
		{"GET", "/api/v1/nodes/", OtherRequest},
	} {
		if got := classify(c.method, c.path); got != c.want {
			t.Errorf("classify(%s %s) = %s, want %s", c.method, c.path, got, c.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(1..100 ms, %v) = %s, want %s", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 0.99); got != 0 {
		t.Errorf("Percentile(nil) = %s", got)
	}
}

func TestRecorderCountsThrottledApart(t *testing.T) {
	r := NewRecorder()
	r.observe(LeaseUpdate, 3*time.Millisecond, true, false)
	r.observe(LeaseUpdate, time.Millisecond, false, true)
	r.observe(LeaseUpdate, 2*time.Second, false, false)
	s := r.Summary(LeaseUpdate)
	if s.Count != 1 || s.Failures != 2 || s.Throttled != 1 || s.Max != 3*time.Millisecond {
		t.Errorf("summary %+v, want 1 success of 3 ms, 2 failures of which 1 throttled", s)
	}
	r.Reset()
	if s := r.Summary(LeaseUpdate); s.Count != 0 || s.Failures != 0 || s.Throttled != 0 {
		t.Errorf("after Reset: %+v, want nothing", s)
	}
}
