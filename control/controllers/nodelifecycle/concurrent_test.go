package nodelifecycle

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// gatedStatusWrites holds every node status write until `want` of them are in flight at
// once, and records the most that ever were. The fake clientset serializes its calls
// under one lock, so the gate sits in front of it.
type gatedStatusWrites struct {
	kubernetes.Interface
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	opened   bool
	open     chan struct{}
}

func (g *gatedStatusWrites) CoreV1() corev1client.CoreV1Interface {
	return gatedCore{CoreV1Interface: g.Interface.CoreV1(), gate: g}
}

type gatedCore struct {
	corev1client.CoreV1Interface
	gate *gatedStatusWrites
}

func (c gatedCore) Nodes() corev1client.NodeInterface {
	return gatedNodes{NodeInterface: c.CoreV1Interface.Nodes(), gate: c.gate}
}

type gatedNodes struct {
	corev1client.NodeInterface
	gate *gatedStatusWrites
}

func (n gatedNodes) UpdateStatus(ctx context.Context, node *v1.Node, opts metav1.UpdateOptions) (*v1.Node, error) {
	g := n.gate
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && !g.opened {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.NodeInterface.UpdateStatus(ctx, node, opts)
}

// Nodes that fall silent together are marked Unknown with their status writes in
// flight together, statusWriteWorkers at most, instead of each waiting for the one
// before: at thousands of nodes, one after another marked the last ones seconds late.
func TestNodesDueTogetherAreMarkedConcurrently(t *testing.T) {
	h := newHarness(t)
	const nodes = 3 * statusWriteWorkers
	for i := range nodes {
		name := fmt.Sprintf("n%02d", i)
		h.newNode(name, allConditions...)
		h.renewLease(name)
	}
	h.sweep()
	gate := &gatedStatusWrites{Interface: h.client, want: statusWriteWorkers, open: make(chan struct{})}
	h.ctrl.client = gate

	h.step(DefaultOptions().GracePeriod)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ctrl.sweep(ctx)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// Writes one at a time never fill the gate; end them so the test can report.
		cancel()
		<-done
		gate.mu.Lock()
		defer gate.mu.Unlock()
		t.Fatalf("the sweep's status writes never had %d in flight at once (at most %d)", statusWriteWorkers, gate.most)
	}
	h.resync()

	if gate.most != statusWriteWorkers {
		t.Errorf("at most %d status writes in flight, want exactly the bound %d", gate.most, statusWriteWorkers)
	}
	if got := h.statusWrites(); got != nodes {
		t.Errorf("%d status writes, want one per silent node (%d)", got, nodes)
	}
	for i := range nodes {
		name := fmt.Sprintf("n%02d", i)
		if c := h.condition(name, v1.NodeReady); c.Status != v1.ConditionUnknown {
			t.Errorf("node %s Ready = %s, want Unknown", name, c.Status)
		}
	}
	if got := h.metric(unknownTotal); got != nodes {
		t.Errorf("%s = %v, want %d", unknownTotal, got, nodes)
	}
}
