package nodelifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newNodeIn makes a Ready node in region "r", zone (no labels for zone "").
func (h *harness) newNodeIn(name, zone string) *v1.Node {
	h.t.Helper()
	node := h.newNode(name, allConditions...)
	if zone != "" {
		node.Labels = map[string]string{v1.LabelTopologyRegion: "r", v1.LabelTopologyZone: zone}
		h.putNode(node)
	}
	return node
}

// newNodesIn makes n Ready nodes named prefix-0.. in zone and returns their names.
func (h *harness) newNodesIn(prefix, zone string, n int) []string {
	h.t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		h.newNodeIn(names[i], zone)
	}
	return names
}

// report is plinthd posting a Ready condition with status s and a new heartbeat.
func (h *harness) report(name string, s v1.ConditionStatus) {
	h.t.Helper()
	h.setCondition(name, v1.NodeReady, s)
}

// setCondition is plinthd posting condition ct with status s and a new heartbeat.
func (h *harness) setCondition(name string, ct v1.NodeConditionType, s v1.ConditionStatus) {
	h.t.Helper()
	node := h.node(name)
	i := conditionIndex(node.Status.Conditions, ct)
	if i < 0 {
		node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: ct})
		i = len(node.Status.Conditions) - 1
	}
	c := &node.Status.Conditions[i]
	if c.Status != s {
		c.Status, c.Reason = s, "Posted"
		c.LastTransitionTime = metav1.NewTime(h.nodeClock)
	}
	c.LastHeartbeatTime = metav1.NewTime(h.nodeClock)
	h.putNode(node)
}

// noExecute is the node's NoExecute taint of the controller's, nil for none; it fails
// the test when the node has both.
func (h *harness) noExecute(name string) *v1.Taint {
	h.t.Helper()
	var found *v1.Taint
	for _, t := range h.node(name).Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute && isNoExecuteKey(t.Key) {
			if found != nil {
				h.t.Fatalf("node %s has both NoExecute taints", name)
			}
			found = &t
		}
	}
	return found
}

// tainted returns the names among names that carry NoExecute key.
func (h *harness) tainted(names []string, key string) []string {
	h.t.Helper()
	var got []string
	for _, n := range names {
		if t := h.noExecute(n); t != nil && t.Key == key {
			got = append(got, n)
		}
	}
	return got
}

// noSchedule lists the node's NoSchedule taint keys in order.
func (h *harness) noSchedule(name string) []string {
	h.t.Helper()
	var keys []string
	for _, t := range h.node(name).Spec.Taints {
		if t.Effect == v1.TaintEffectNoSchedule {
			keys = append(keys, t.Key)
		}
	}
	return keys
}

// zoneMetric reads a gauge or counter of one zone label; 0 when there is no series.
func (h *harness) zoneMetric(name, zone string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != zone {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// drainEvents returns the events recorded so far, as "Type Reason Message".
func (h *harness) drainEvents() []string {
	var got []string
	for {
		select {
		case e := <-h.events.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// run advances the clock by total in steps of step, sweeping after each.
func (h *harness) run(total, step time.Duration) {
	h.t.Helper()
	for elapsed := time.Duration(0); elapsed < total; elapsed += step {
		h.step(step)
		h.sweep()
	}
}

// optsWith returns the defaults changed by f.
func optsWith(f func(*Options)) Options {
	o := DefaultOptions()
	f(&o)
	return o
}

func checkTaintedCount(t *testing.T, h *harness, names []string, key string, want int, when string) {
	t.Helper()
	if got := h.tainted(names, key); len(got) != want {
		t.Fatalf("%s: %d nodes tainted %s (%v), want %d", when, len(got), key, got, want)
	}
}
