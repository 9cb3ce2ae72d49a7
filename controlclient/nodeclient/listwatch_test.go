package nodeclient_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

// runInformer starts an informer on lw until the test ends and waits for its first sync.
func runInformer(t *testing.T, lw cache.ListerWatcher, obj runtime.Object) cache.Store {
	t.Helper()
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 20*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatalf("%T informer did not sync within 20s", obj)
	}
	return inf.GetStore()
}

// waitForKeys waits until store holds exactly want (namespace/name keys, sorted).
func waitForKeys(t *testing.T, store cache.Store, want ...string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("the informer holds %v", want), func() bool {
		got := store.ListKeys()
		slices.Sort(got)
		return slices.Equal(got, want)
	})
}

// waitUntil polls cond for up to 20 s: informers follow the API asynchronously.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The ListerWatchers feed informers from the real API (watch-list included): the
// initial state, then changes.
func TestListerWatchersFeedInformers(t *testing.T) {
	c, admin := startAPI(t)
	ctx := testContext(t)
	mustCreatePod := func(ns, name, node string) {
		t.Helper()
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, testPod(ns, name, node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustCreatePod("default", "web", "node-a")
	mustCreatePod("default", "db", "node-b")
	if _, err := admin.CoreV1().Services("default").Create(ctx, testService("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("default").Create(ctx, testSlice("web-1", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"node-a", "node-b"} {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	pods := runInformer(t, nodeclient.NodePodsListerWatcher(c, "node-a"), &corev1.Pod{})
	nodes := runInformer(t, nodeclient.NodeListerWatcher(c, "node-a"), &corev1.Node{})
	services := runInformer(t, nodeclient.ServicesListerWatcher(c, "!service.kubernetes.io/service-proxy-name"), &corev1.Service{})
	slicesStore := runInformer(t, nodeclient.EndpointSlicesListerWatcher(c, ""), &discoveryv1.EndpointSlice{})
	waitForKeys(t, pods, "default/web")
	waitForKeys(t, nodes, "node-a")
	waitForKeys(t, slicesStore, "default/web-1")
	if _, ok, _ := services.GetByKey("default/web"); !ok {
		t.Errorf("Services informer lacks default/web: %v", services.ListKeys())
	}

	// Changes arrive through the watch; the label and field selectors hold there too.
	mustCreatePod("kube-system", "dns", "node-a")
	mustCreatePod("default", "cache", "node-b")
	other := testService("other")
	other.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "elsewhere"}
	if _, err := admin.CoreV1().Services("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, testService("api"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.DiscoveryV1().EndpointSlices("default").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForKeys(t, pods, "default/web", "kube-system/dns")
	waitForKeys(t, slicesStore)
	// default/other was created before default/api, so once api is seen other would
	// have been too, were it not excluded.
	waitUntil(t, "the Services informer sees default/api", func() bool {
		_, ok, _ := services.GetByKey("default/api")
		return ok
	})
	if _, ok, _ := services.GetByKey("default/other"); ok {
		t.Error("Services informer holds default/other, which its label selector excludes")
	}
}

// Over a fake clientset, which cannot stream watch lists, the ListerWatchers must
// make the reflector list and watch instead, or the informer never syncs.
func TestListerWatcherOverFakeClientsetSyncs(t *testing.T) {
	cs := fake.NewClientset(testPod("default", "web", "node-a"), testPod("default", "db", "node-b"))
	pods := runInformer(t, nodeclient.NodePodsListerWatcher(nodeclienttest.FromClientset(cs), "node-a"), &corev1.Pod{})
	// The fake ignores field selectors; what matters here is that the informer synced
	// and saw the objects.
	if len(pods.ListKeys()) == 0 {
		t.Fatal("informer over the fake clientset synced empty")
	}
}
