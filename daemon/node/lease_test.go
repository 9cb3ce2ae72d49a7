package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

func registeredNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-node-a"}}
}

func getLease(t *testing.T, e *testEnv) *coordinationv1.Lease {
	t.Helper()
	// Read through the tracker, not the client, so the read is not counted as the
	// agent's GET.
	obj, err := e.client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), LeaseNamespace, "node-a")
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return obj.(*coordinationv1.Lease)
}

func TestLeaseCreatedAndRenewed(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	e.agent.setNodeUID("uid-node-a")
	e.start(t, e.agent.RunLease)

	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("first wait = %s, want the 10s renew interval (a quarter of 40s)", got)
	}
	l := getLease(t, e)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "node-a" {
		t.Errorf("holderIdentity = %v, want node-a", l.Spec.HolderIdentity)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("leaseDurationSeconds = %v, want 40", l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(t0) {
		t.Errorf("renewTime = %v, want %s", l.Spec.RenewTime, t0)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "uid-node-a"}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != wantOwner {
		t.Errorf("ownerReferences = %+v, want [%+v]", l.OwnerReferences, wantOwner)
	}
	if got := metricValue(t, e.reg, "plinth_node_lease_last_renew_timestamp_seconds", nil); got != float64(t0.Unix()) {
		t.Errorf("last renew gauge = %v, want %d", got, t0.Unix())
	}

	getsBefore := countActions(e.client, "get", "leases", "")
	for i := 1; i <= 3; i++ {
		e.clock.Step(10 * time.Second)
		if got := e.clock.nextWait(t); got != 10*time.Second {
			t.Fatalf("wait after renewal %d = %s, want 10s", i, got)
		}
		want := t0.Add(time.Duration(i) * 10 * time.Second)
		if rt := getLease(t, e).Spec.RenewTime; rt == nil || !rt.Time.Equal(want) {
			t.Errorf("renewal %d: renewTime = %v, want %s", i, rt, want)
		}
	}
	if got := countActions(e.client, "get", "leases", "") - getsBefore; got != 0 {
		t.Errorf("%d lease GETs during steady renewals, want 0 (renew from the cached copy)", got)
	}
	if got := metricValue(t, e.reg, "plinth_node_lease_renew_total", map[string]string{"result": "success"}); got != 4 {
		t.Errorf("renew success count = %v, want 4", got)
	}
	if got := metricValue(t, e.reg, "plinth_node_lease_renew_duration_seconds", nil); got != 4 {
		t.Errorf("renew duration observations = %v, want 4", got)
	}
}

func TestLeaseRecreatedAfterDeletion(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	e.start(t, e.agent.RunLease)
	e.clock.nextWait(t)
	if err := e.client.CoordinationV1().Leases(LeaseNamespace).Delete(context.Background(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(10 * time.Second)
	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("wait after recreating = %s, want the normal 10s (recreation is a success)", got)
	}
	l := getLease(t, e)
	if rt := l.Spec.RenewTime; rt == nil || !rt.Time.Equal(t0.Add(10*time.Second)) {
		t.Errorf("recreated lease renewTime = %v, want %s", rt, t0.Add(10*time.Second))
	}
	// The UID was learnt from a GET of the Node, since this agent did not register.
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-node-a" {
		t.Errorf("recreated lease ownerReferences = %+v, want the Node uid-node-a", l.OwnerReferences)
	}
}

func TestLeaseConflictRefetchesAndRetries(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	e.start(t, e.agent.RunLease)
	e.clock.nextWait(t)
	var conflicts atomic.Int32
	e.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, kruntime.Object, error) {
		if conflicts.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "node-a", nil)
		}
		return false, nil, nil
	})
	getsBefore := countActions(e.client, "get", "leases", "")
	e.clock.Step(10 * time.Second)
	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("wait after a conflict resolved in the same renewal = %s, want 10s", got)
	}
	if got := countActions(e.client, "get", "leases", "") - getsBefore; got != 1 {
		t.Errorf("lease GETs after a conflict = %d, want 1 refetch", got)
	}
	if rt := getLease(t, e).Spec.RenewTime; !rt.Time.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("renewTime = %v, want %s", rt, t0.Add(10*time.Second))
	}
}

func TestLeaseBackoffOnFailureThenNormalInterval(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	var down atomic.Bool
	down.Store(true)
	for _, verb := range []string{"get", "create", "update"} {
		e.client.PrependReactor(verb, "leases", func(k8stesting.Action) (bool, kruntime.Object, error) {
			if down.Load() {
				return true, nil, apierrors.NewInternalError(errUnavailable)
			}
			return false, nil, nil
		})
	}
	e.start(t, e.agent.RunLease)
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 7 * time.Second, 7 * time.Second}
	for i, w := range want {
		got := e.clock.nextWait(t)
		if got != w {
			t.Fatalf("wait after failure %d = %s, want %s", i+1, got, w)
		}
		if i == len(want)-1 {
			down.Store(false)
		}
		e.clock.Step(got)
	}
	if got := e.clock.nextWait(t); got != 10*time.Second {
		t.Fatalf("wait after recovery = %s, want the normal 10s", got)
	}
	if got := metricValue(t, e.reg, "plinth_node_lease_renew_total", map[string]string{"result": "error"}); got != float64(len(want)) {
		t.Errorf("renew error count = %v, want %d", got, len(want))
	}
	if got := metricValue(t, e.reg, "plinth_node_lease_renew_total", map[string]string{"result": "success"}); got != 1 {
		t.Errorf("renew success count = %v, want 1", got)
	}
	if !strings.Contains(e.logs.String(), "node lease renewed after failures") {
		t.Errorf("recovery not logged:\n%s", e.logs.String())
	}
	// Back to normal: a second failure starts the backoff from 200ms again.
	down.Store(true)
	e.clock.Step(10 * time.Second)
	if got := e.clock.nextWait(t); got != 200*time.Millisecond {
		t.Errorf("wait after a new failure = %s, want backoff restarted at 200ms", got)
	}
}

func TestLeaseOwnerReferenceAddedOnceNodeExists(t *testing.T) {
	cfg := testConfig()
	cfg.RegisterNode = false
	e := newTestEnv(t, cfg, nil) // no Node yet
	e.start(t, e.agent.RunLease)
	e.clock.nextWait(t)
	if refs := getLease(t, e).OwnerReferences; len(refs) != 0 {
		t.Fatalf("ownerReferences = %v before the Node exists, want none", refs)
	}
	if _, err := e.client.CoreV1().Nodes().Create(context.Background(), registeredNode(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(10 * time.Second)
	e.clock.nextWait(t)
	refs := getLease(t, e).OwnerReferences
	if len(refs) != 1 || refs[0].UID != "uid-node-a" || refs[0].Kind != "Node" {
		t.Errorf("ownerReferences = %+v, want the Node uid-node-a once it exists", refs)
	}
}

func TestLeaseOwnerReferenceFollowsReRegisteredNode(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	e.agent.setNodeUID("uid-node-a")
	e.start(t, e.agent.RunLease)
	e.clock.nextWait(t)
	e.agent.setNodeUID("uid-node-a-2") // the Node was deleted and registered again
	e.clock.Step(10 * time.Second)
	e.clock.nextWait(t)
	refs := getLease(t, e).OwnerReferences
	if len(refs) != 1 || refs[0].UID != "uid-node-a-2" {
		t.Errorf("ownerReferences = %+v, want one reference to uid-node-a-2", refs)
	}
}
