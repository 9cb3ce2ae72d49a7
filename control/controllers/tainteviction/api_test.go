package tainteviction_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/nodelifecycle"
	"github.com/plinth/plinth/control/controllers/tainteviction"
)

// The API test runs the node lifecycle and taint eviction controllers together against
// the real API server over a real embedded etcd, on a fake clock: what it checks is
// that their writes (node status, taints, pod status, preconditioned deletes, events)
// are ones the registry accepts and that they hand over to each other through it.
// Timeouts bound informer and API round trips; the controllers' time is the fake clock.
const apiTimeout = 30 * time.Second

// newAPI serves every registry resource, with the default namespaces created.
func newAPI(t *testing.T) kubernetes.Interface {
	t.Helper()
	return apitest.Start(t, apitest.Options{}).Client
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSilentNodeTaintedAndPodsEvictedThroughTheAPI(t *testing.T) {
	client := newAPI(t)
	ctx := t.Context()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)

	for _, name := range []string{"n1", "n2"} {
		node, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hb := metav1.NewTime(t0)
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Posted", LastHeartbeatTime: hb, LastTransitionTime: hb}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	renew := func() {
		t.Helper()
		rt := metav1.NewMicroTime(clk.Now())
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: v1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{RenewTime: &rt}}
		old, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "n1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = client.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
		} else if err == nil {
			old.Spec.RenewTime = &rt
			_, err = client.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, old, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	renew()
	secs := int64(30)
	pod := func(name string, tol v1.Toleration) {
		t.Helper()
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: "n2", Tolerations: []v1.Toleration{tol}, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("web", v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs})
	pod("forever", v1.Toleration{Operator: v1.TolerationOpExists})

	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer events.Shutdown()
	factory := informers.NewSharedInformerFactory(client, 0)
	lifecycle, err := nodelifecycle.New(nodelifecycle.Config{Client: client, Nodes: factory.Core().V1().Nodes(),
		Leases: factory.Coordination().V1().Leases(), Pods: factory.Core().V1().Pods(), Clock: clk,
		Recorder: events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "node-controller"}), Options: nodelifecycle.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	evictions, err := tainteviction.New(tainteviction.Config{Client: client, Pods: factory.Core().V1().Pods(),
		Nodes: factory.Core().V1().Nodes(), Clock: clk,
		Recorder: events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "taint-eviction-controller"})})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	defer func() {
		cancel()
		<-done
		<-done
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { _ = lifecycle.Run(runCtx); done <- struct{}{} }()
	go func() { _ = evictions.Run(runCtx); done <- struct{}{} }()
	eventually(t, "the controllers' timers", func() bool { return clk.Waiters() >= 2 })

	getNode := func(name string) *v1.Node {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	unreachable := func() *v1.Taint {
		for _, tt := range getNode("n2").Spec.Taints {
			if tt.Key == v1.TaintNodeUnreachable && tt.Effect == v1.TaintEffectNoExecute {
				return &tt
			}
		}
		return nil
	}
	// n1 renews every 5 s; n2 is silent. 50 s on, n2 is Unknown and tainted.
	for range 10 {
		clk.Step(5 * time.Second)
		renew()
	}
	eventually(t, "n2's NoExecute unreachable taint", func() bool { return unreachable() != nil })
	taint := unreachable()
	if taint.TimeAdded == nil || taint.TimeAdded.Time.Before(t0.Add(50*time.Second)) {
		t.Fatalf("taint timeAdded %v, want at or after the end of the grace period", taint.TimeAdded)
	}
	if len(getNode("n1").Spec.Taints) != 0 {
		t.Fatalf("heartbeating n1 tainted: %v", getNode("n1").Spec.Taints)
	}
	deadline := taint.TimeAdded.Time.Add(30 * time.Second)

	webGoing := func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil)
	}
	for clk.Now().Add(5 * time.Second).Before(deadline) {
		clk.Step(5 * time.Second)
		renew()
	}
	time.Sleep(100 * time.Millisecond) // a wrong early deletion would have shown by now
	if webGoing() {
		t.Fatalf("web deleted before its 30 s toleration ran out (now %v, deadline %v)", clk.Now(), deadline)
	}
	clk.SetTime(deadline)
	renew()
	eventually(t, "web to be deleted at its deadline", webGoing)
	if p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		found := false
		for _, c := range p.Status.Conditions {
			found = found || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "DeletionByTaintManager")
		}
		if !found {
			t.Errorf("web is terminating without DisruptionTarget: %+v", p.Status.Conditions)
		}
	}
	forever, err := client.CoreV1().Pods("default").Get(ctx, "forever", metav1.GetOptions{})
	if err != nil || forever.DeletionTimestamp != nil {
		t.Fatalf("pod tolerating everything: %v, deletionTimestamp %v", err, forever.DeletionTimestamp)
	}
	eventually(t, "the TaintManagerEviction and RegisteredNode events", func() bool {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		reasons := map[string]bool{}
		for _, e := range list.Items {
			reasons[e.Reason+"/"+e.InvolvedObject.Name] = true
		}
		return reasons["TaintManagerEviction/web"] && reasons["RegisteredNode/n1"] && reasons["NodeNotReady/n2"]
	})
}
