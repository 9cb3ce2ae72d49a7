package node

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func TestLoopLiveness(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	l := newLoopLiveness("test", clk, 10*time.Second) // stale after 25s
	if err := l.alive(); err != nil {
		t.Errorf("before start: %v, want nil", err)
	}
	l.start()
	clk.Step(25 * time.Second)
	if err := l.alive(); err != nil {
		t.Errorf("at exactly 2×wait+slack: %v, want nil", err)
	}
	clk.Step(time.Millisecond)
	if err := l.alive(); err == nil || !strings.Contains(err.Error(), "test loop has not finished an iteration") {
		t.Errorf("past the limit: %v, want a stall error", err)
	}
	l.iterated()
	if err := l.alive(); err != nil {
		t.Errorf("after an iteration: %v, want nil", err)
	}
	l.stop()
	if err := l.alive(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("after stop: %v, want a stopped error", err)
	}
}

// A control service that answers nothing but errors must not make the lease loop look
// dead: the node keeps running (fail static).
func TestLeaseAliveWhileControlServiceDown(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil)
	e.client.PrependReactor("*", "*", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if err := e.agent.LeaseAlive(); err != nil {
		t.Fatalf("LeaseAlive before start = %v, want nil", err)
	}
	e.start(t, e.agent.RunLease)
	var elapsed time.Duration
	for elapsed < 10*time.Minute {
		d := e.clock.nextWait(t)
		if err := e.agent.LeaseAlive(); err != nil {
			t.Fatalf("LeaseAlive after %s of failures: %v", elapsed, err)
		}
		e.clock.Step(d)
		elapsed += d
	}
}

func TestLeaseAliveFailsWhenLoopStalls(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	release := make(chan struct{})
	var hang atomic.Bool
	hung := make(chan struct{})
	e.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, kruntime.Object, error) {
		if hang.Load() {
			close(hung)
			<-release // a request that never returns
		}
		return false, nil, nil
	})
	e.start(t, e.agent.RunLease)
	t.Cleanup(func() { close(release) }) // runs before the loop is stopped

	e.clock.nextWait(t)
	hang.Store(true)
	e.clock.Step(10 * time.Second) // the next renewal hangs
	select {
	case <-hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging renewal was never sent")
	}
	// The longest lease wait is 10s, so the limit is 2×10s+5s = 25s after the last
	// finished iteration at t0.
	e.clock.Step(15 * time.Second) // t0+25s
	if err := e.agent.LeaseAlive(); err != nil {
		t.Errorf("LeaseAlive at the limit: %v, want nil", err)
	}
	e.clock.Step(time.Second)
	if err := e.agent.LeaseAlive(); err == nil || !strings.Contains(err.Error(), "node lease loop has not finished an iteration") {
		t.Errorf("LeaseAlive while stalled = %v, want a stall error", err)
	}
}

func TestStatusAliveFailsWhenLoopStalls(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	release := make(chan struct{})
	var hang atomic.Bool
	gets := atomic.Int32{}
	e.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, kruntime.Object, error) {
		gets.Add(1)
		if hang.Load() {
			<-release
		}
		return false, nil, nil
	})
	e.start(t, e.agent.RunStatus)
	t.Cleanup(func() { close(release) })
	e.clock.nextWait(t)
	hang.Store(true)
	e.clock.Step(10 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); gets.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hanging status GET was never sent")
		}
	}
	if err := e.agent.StatusAlive(); err != nil {
		t.Errorf("StatusAlive 10s after the last iteration: %v, want nil", err)
	}
	e.clock.Step(16 * time.Second) // 26s > 2×10s+5s
	if err := e.agent.StatusAlive(); err == nil || !strings.Contains(err.Error(), "node status loop") {
		t.Errorf("StatusAlive while stalled = %v, want a stall error", err)
	}
}

func TestAliveReportsStoppedLoop(t *testing.T) {
	e := newTestEnv(t, testConfig(), nil, registeredNode())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.agent.RunLease(ctx); close(done) }()
	e.clock.nextWait(t)
	cancel()
	<-done
	close(e.clock.done)
	if err := e.agent.LeaseAlive(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("LeaseAlive after RunLease returned = %v, want a stopped error", err)
	}
}
