package service

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth/plinth/control/storage"
)

// replica is one control service process, in-process, on a shared etcd.
type replica struct {
	client kubernetes.Interface
	stop   context.CancelFunc
	done   chan error
}

func startReplica(t *testing.T, etcdEndpoint, identity string) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o := DefaultOptions()
	o.DataDir = t.TempDir()
	o.BindAddress, o.SecurePort = "127.0.0.1", 0
	o.EtcdServers = []string{etcdEndpoint}
	o.LeaderElection = LeaderElection{Enabled: true, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second,
		RetryPeriod: 250 * time.Millisecond, Identity: identity}
	ready := make(chan Running, 1)
	r := &replica{stop: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- Run(ctx, o, slog.New(slog.NewTextHandler(io.Discard, nil)), func(x Running) { ready <- x })
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	select {
	case running := <-ready:
		cfg, err := clientcmd.BuildConfigFromFlags("", running.AdminKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		r.client = kubernetes.NewForConfigOrDie(cfg)
	case err := <-r.done:
		t.Fatalf("replica %s: %v", identity, err)
	case <-time.After(time.Minute):
		t.Fatalf("replica %s did not start", identity)
	}
	return r
}

// leading reads the replica's own plinth_leader_election_master_status.
func leading(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "plinth_leader_election_master_status "); ok {
			return v
		}
	}
	return "absent"
}

func holder(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), leaderLeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func waitHolder(t *testing.T, c kubernetes.Interface, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if holder(t, c) == want {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("leader Lease held by %q after %s, want %q", holder(t, c), within, want)
	return 0
}

// TestTwoReplicasElectOneLeader runs two control services on one etcd: one holds the
// leader Lease; when it stops, the other takes over within the lease duration.
func TestTwoReplicasElectOneLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdDir := t.TempDir()
	etcd, err := storage.StartEmbedded(ctx, etcdDir, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	endpoint := "unix://" + filepath.Join(etcdDir, "client.sock")

	a := startReplica(t, endpoint, "replica-a")
	waitHolder(t, a.client, "replica-a", 10*time.Second)
	b := startReplica(t, endpoint, "replica-b")
	// b serves the API but does not take the Lease while a renews it.
	time.Sleep(2 * time.Second)
	if got := holder(t, b.client); got != "replica-a" {
		t.Fatalf("leader after b joined: %q, want replica-a", got)
	}
	if la, lb := leading(t, a.client), leading(t, b.client); la != "1" || lb != "0" {
		t.Fatalf("leading: a=%s b=%s, want only a running the control loops", la, lb)
	}

	a.stop()
	if err := <-a.done; err != nil {
		t.Fatalf("replica a stopped with %v", err)
	}
	a.done <- nil // for the cleanup
	took := waitHolder(t, b.client, "replica-b", 3*time.Second+2*time.Second)
	t.Logf("replica-b took over %s after replica-a stopped", took.Round(10*time.Millisecond))
	for start := time.Now(); leading(t, b.client) != "1"; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("replica-b holds the Lease but does not run the control loops")
		}
	}
}
