package nodesim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Node is one simulated node: a daemon/node Agent running until it is stopped.
type Node struct {
	// Name is the Node's and its Lease's name.
	Name string

	cancel context.CancelFunc
	done   chan struct{}
	clock  clock.PassiveClock

	lastHeartbeat     atomic.Int64 // unix nanoseconds of the last successful heartbeat; 0 before
	stopAtHeartbeat   atomic.Bool
	stopOnce          sync.Once
	stoppedAtUnixNano atomic.Int64
}

func newNode(name string, cancel context.CancelFunc, clk clock.PassiveClock) *Node {
	return &Node{Name: name, cancel: cancel, done: make(chan struct{}), clock: clk}
}

// heartbeat records a successful heartbeat that completed at end, and stops the node
// there when StopAfterHeartbeat asked for it.
func (n *Node) heartbeat(end time.Time) {
	n.lastHeartbeat.Store(end.UnixNano())
	if n.stopAtHeartbeat.Load() {
		n.stopAt(end)
	}
}

func (n *Node) stopAt(t time.Time) {
	n.stopOnce.Do(func() {
		n.stoppedAtUnixNano.Store(t.UnixNano())
		n.cancel()
	})
}

// LastHeartbeat is when the node's last successful heartbeat (Lease create or update,
// or status update) got its response; zero before the first.
func (n *Node) LastHeartbeat() time.Time { return fromUnixNano(n.lastHeartbeat.Load()) }

// Done is closed when the node's agent has returned.
func (n *Node) Done() <-chan struct{} { return n.done }

// Stop stops the node now and waits until its agent has returned. It returns when the
// stop began (the first stop's time if it was stopped before).
func (n *Node) Stop() time.Time {
	n.stopAt(n.clock.Now())
	<-n.done
	return n.StoppedAt()
}

// StopAtNextHeartbeat arms the node to stop the moment its next heartbeat succeeds,
// so that its last heartbeat and its stop are the same instant. It returns at once;
// Done tells when the node has stopped.
func (n *Node) StopAtNextHeartbeat() { n.stopAtHeartbeat.Store(true) }

// StoppedAt is when the node was stopped; zero while it runs.
func (n *Node) StoppedAt() time.Time { return fromUnixNano(n.stoppedAtUnixNano.Load()) }

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
