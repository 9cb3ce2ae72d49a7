package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/controllers/leasegc"
	"github.com/plinth/plinth/control/storage"
)

// TestReplicaPublishesItsIdentityLease: a running replica keeps kube-system's
// identity Lease for its host, held by the identity it also uses for leader election.
func TestReplicaPublishesItsIdentityLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcdDir := t.TempDir()
	etcd, err := storage.StartEmbedded(ctx, etcdDir, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	r := startReplica(t, "unix://"+filepath.Join(etcdDir, "client.sock"), "replica-a")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	name := leasegc.IdentityLeaseName(host)
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := r.client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if h := l.Spec.HolderIdentity; h == nil || *h != "replica-a" || l.Labels[leasegc.ComponentLabel] != leasegc.Component {
				t.Fatalf("identity Lease %s: holder %v, labels %v; want replica-a and the component label", name, h, l.Labels)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no identity Lease %s after 15 s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
