package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// TestInformerSurvivesRestartAndCompaction runs a client-go informer (watch-list on, as
// by default) through a proxy, restarts the control service, and then restarts it again
// while the informer is partitioned and etcd compacts past its resourceVersion: the
// informer must relist after 410 Gone and converge.
func TestInformerSurvivesRestartAndCompaction(t *testing.T) {
	port := freePort(t)
	c := startControlOnPort(t, port, "--etcd-compaction-interval", "1s")
	admin := clientFor(t, c.kubeconfig)
	proxy := newTCPProxy(t, fmt.Sprintf("127.0.0.1:%d", port))
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "https://" + proxy.addr()
	watched, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leases := admin.CoordinationV1().Leases("kube-node-lease")
	create := func(name string) {
		t.Helper()
		if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")

	factory := informers.NewSharedInformerFactoryWithOptions(watched, 0, informers.WithNamespace("kube-node-lease"))
	informer := factory.Coordination().V1().Leases()
	var adds atomic.Int64
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		t.Fatal("informer did not sync")
	}
	has := func(names ...string) func() (bool, string) {
		return func() (bool, string) {
			var got []string
			for _, obj := range informer.Informer().GetStore().List() {
				got = append(got, obj.(*coordinationv1.Lease).Name)
			}
			for _, n := range names {
				if _, err := informer.Lister().Leases("kube-node-lease").Get(n); err != nil {
					return false, strings.Join(got, ",")
				}
			}
			return true, ""
		}
	}
	eventually(t, 10*time.Second, "informer has the first lease", has("before"))

	// A restart of the control service on the same data directory and port.
	c.control.kill(syscall.SIGTERM)
	c = startControlOnPort(t, port, "--etcd-compaction-interval", "1s", "--data-dir", c.dataDir)
	create("after-restart")
	eventually(t, 60*time.Second, "informer follows after a control-service restart", has("before", "after-restart"))

	// Partition the informer (new connections refused), then stop the control service
	// gracefully: the informer's open watch ends cleanly, so the reflector reconnects
	// with a plain watch from its last resourceVersion. While it cannot, objects change
	// and etcd compacts past that revision; when it reconnects it must get 410 Gone and
	// relist.
	// client-go treats a watch that ends within a second of starting as broken and
	// relists; let the informer's current watch age first.
	time.Sleep(2 * time.Second)
	if err := proxy.setDown(true); err != nil {
		t.Fatal(err)
	}
	c.control.kill(syscall.SIGTERM)
	c = startControlOnPort(t, port, "--etcd-compaction-interval", "1s", "--data-dir", c.dataDir)
	for i := range 20 {
		create(fmt.Sprintf("during-partition-%d", i))
	}
	time.Sleep(3 * time.Second) // three compaction intervals
	if err := proxy.setDown(false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "informer relists after 410 and converges", has("during-partition-0", "during-partition-19"))
	if adds.Load() < 22 {
		t.Fatalf("informer saw %d adds, want at least 22", adds.Load())
	}
	// The reconnecting watch must really have hit a compacted revision.
	metrics, err := kubectl(t, c.kubeconfig, "get", "--raw", "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `plinth_apiserver_watch_expired_total{resource="leases"}`) {
		t.Fatalf("no watch of leases ended with 410 Gone; the partition did not outlast the compaction")
	}
}
