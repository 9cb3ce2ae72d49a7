package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestRunRegistersHeartbeatsAndReports(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	assignUIDOnCreate(e.client, "uid-run")
	e.start(t, e.agent.Run)
	// Both loops wait one period after their first iteration.
	for i := 0; i < 2; i++ {
		if d := e.clock.nextWait(t); d != 10*time.Second {
			t.Fatalf("wait %d = %s, want 10s", i, d)
		}
	}
	e.clock.Step(10 * time.Second)
	for i := 0; i < 2; i++ {
		e.clock.nextWait(t)
	}
	n := getNode(t, e)
	if n.UID != "uid-run" || condition(t, n, corev1.NodeReady).Status != corev1.ConditionTrue {
		t.Errorf("node %s uid %q conditions %+v; want registered and Ready", n.Name, n.UID, n.Status.Conditions)
	}
	l := getLease(t, e)
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-run" {
		t.Errorf("lease owner references = %+v, want the registered Node", l.OwnerReferences)
	}
	if !l.Spec.RenewTime.Time.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("renewTime = %s, want %s", l.Spec.RenewTime, t0.Add(10*time.Second))
	}
	if err := e.agent.LeaseAlive(); err != nil {
		t.Errorf("LeaseAlive: %v", err)
	}
	if err := e.agent.StatusAlive(); err != nil {
		t.Errorf("StatusAlive: %v", err)
	}
}
