package nodelifecycle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const evictionsTotal = "plinth_nodelifecycle_evictions_total"

// TestEvictionRateOneNodePerTenSeconds: at the default 0.1 nodes/s a zone taints one
// node, then one every 10 s, each with timeAdded at the moment it was tainted.
func TestEvictionRateOneNodePerTenSeconds(t *testing.T) {
	h := newHarness(t)
	names := h.newNodesIn("n", "a", 10)
	h.sweep()
	down := names[:3] // 30% of the zone: Normal
	for _, n := range down {
		h.report(n, v1.ConditionFalse)
	}
	start := h.clock.Now()
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "at once")
	h.step(5 * time.Second)
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "after 5 s")
	h.step(4*time.Second + 999*time.Millisecond)
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "after 9.999 s")
	h.step(time.Millisecond)
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 2, "after 10 s")
	h.step(10 * time.Second)
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 3, "after 20 s")

	// Tainted in the order they became due, 10 s apart, from the controller's clock.
	for i, n := range down {
		taint := h.noExecute(n)
		if want := start.Add(time.Duration(i) * 10 * time.Second); taint.TimeAdded == nil || !taint.TimeAdded.Time.Equal(want) {
			t.Errorf("%s tainted at %v, want %v", n, taint.TimeAdded, want)
		}
	}
	for _, n := range names[3:] {
		if h.noExecute(n) != nil {
			t.Errorf("Ready node %s got a NoExecute taint", n)
		}
	}
	if got := h.zoneMetric(evictionsTotal, "r:a"); got != 3 {
		t.Errorf("%s{zone=r:a} = %v, want 3", evictionsTotal, got)
	}
	if got := h.zoneMetric("plinth_nodelifecycle_zone_health", "r:a"); got != 70 {
		t.Errorf("zone health = %v, want 70", got)
	}
	if got := h.zoneMetric("plinth_nodelifecycle_unhealthy_nodes_in_zone", "r:a"); got != 3 {
		t.Errorf("unhealthy nodes = %v, want 3", got)
	}
	if got := h.zoneMetric("plinth_nodelifecycle_zone_size", "r:a"); got != 10 {
		t.Errorf("zone size = %v, want 10", got)
	}

	// Ready again: the taint goes at once, without a token.
	h.report(down[0], v1.ConditionTrue)
	h.sweep()
	if h.noExecute(down[0]) != nil {
		t.Error("NoExecute taint stayed on a node that is Ready again")
	}
}

// TestRunPacesTaintsWithTimers runs the controller loop itself: with a monitor period of
// an hour, only the token bucket's timer can wake it for the second node.
func TestZonesAreRateLimitedIndependently(t *testing.T) {
	h := newHarness(t)
	a := h.newNodesIn("a", "a", 5)
	b := h.newNodesIn("b", "b", 5)
	h.sweep()
	for _, n := range append(a[:2:2], b[:2]...) {
		h.report(n, v1.ConditionFalse)
	}
	h.sweep()
	checkTaintedCount(t, h, a, v1.TaintNodeNotReady, 1, "zone a at once")
	checkTaintedCount(t, h, b, v1.TaintNodeNotReady, 1, "zone b at once")
	h.run(10*time.Second, 5*time.Second)
	checkTaintedCount(t, h, a, v1.TaintNodeNotReady, 2, "zone a after 10 s")
	checkTaintedCount(t, h, b, v1.TaintNodeNotReady, 2, "zone b after 10 s")
}

// TestSmallZoneInPartialDisruptionStops: 6 of 10 nodes not Ready is at least 55% with
// more than two down, and a zone of at most 50 nodes then stops tainting altogether,
// until it recovers below the threshold.
func TestSmallZoneInPartialDisruptionStops(t *testing.T) {
	h := newHarnessWith(t, optsWith(func(o *Options) { o.GracePeriod = time.Hour }))
	names := h.newNodesIn("n", "a", 10)
	h.sweep()
	down := names[:6]
	for _, n := range down {
		h.report(n, v1.ConditionFalse)
	}
	h.run(10*time.Minute, 5*time.Second)
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 0, "10 minutes of partial disruption")
	// NoSchedule taints are not rate limited and still follow the condition.
	for _, n := range down {
		if got := h.noSchedule(n); len(got) != 1 || got[0] != v1.TaintNodeNotReady {
			t.Errorf("%s NoSchedule taints %v, want [not-ready]", n, got)
		}
	}
	if got := h.zoneMetric(evictionsTotal, "r:a"); got > 0 {
		t.Errorf("evictions = %v in a stopped zone", got)
	}

	// Three come back: 3 of 10 down is Normal again and tainting resumes at 0.1/s.
	for _, n := range down[:3] {
		h.report(n, v1.ConditionTrue)
	}
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "back to Normal")
	h.run(20*time.Second, 5*time.Second)
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 3, "20 s after Normal")
}

// TestLargeZoneInPartialDisruptionUsesSecondaryRate: 40 of 60 nodes not Ready, and
// with more than 50 nodes the zone keeps tainting at 0.01 nodes/s: one per 100 s.
func TestLargeZoneInPartialDisruptionUsesSecondaryRate(t *testing.T) {
	h := newHarnessWith(t, optsWith(func(o *Options) { o.GracePeriod = time.Hour }))
	names := h.newNodesIn("n", "a", 60)
	h.sweep()
	down := names[:40]
	for _, n := range down {
		h.report(n, v1.ConditionFalse)
	}
	h.sweep()
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "at once")
	h.run(95*time.Second, 5*time.Second)
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 1, "after 95 s")
	h.run(5*time.Second, 5*time.Second)
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 2, "after 100 s")
	h.run(100*time.Second, 5*time.Second)
	checkTaintedCount(t, h, down, v1.TaintNodeNotReady, 3, "after 200 s")

	// The same zone with 50 nodes would have stopped: the threshold is "more than".
	h2 := newHarnessWith(t, optsWith(func(o *Options) { o.GracePeriod = time.Hour }))
	names = h2.newNodesIn("n", "a", 50)
	h2.sweep()
	for _, n := range names[:40] {
		h2.report(n, v1.ConditionFalse)
	}
	h2.run(200*time.Second, 5*time.Second)
	checkTaintedCount(t, h2, names, v1.TaintNodeNotReady, 0, "50-node zone after 200 s")
}

// TestFullDisruptionOfOneZoneTaintsAtNormalRate: a zone with no Ready node, while
// another zone is healthy, is taken as dead and tainted at the normal rate.
func TestFullDisruptionOfOneZoneTaintsAtNormalRate(t *testing.T) {
	h := newHarnessWith(t, optsWith(func(o *Options) { o.GracePeriod = time.Hour }))
	dead := h.newNodesIn("a", "a", 4)
	h.newNodesIn("b", "b", 2)
	h.sweep()
	for _, n := range dead {
		h.report(n, v1.ConditionFalse)
	}
	h.sweep()
	checkTaintedCount(t, h, dead, v1.TaintNodeNotReady, 1, "at once")
	h.run(30*time.Second, 5*time.Second)
	checkTaintedCount(t, h, dead, v1.TaintNodeNotReady, 4, "after 30 s")
}

// TestAllZonesFullyDisruptedEvictNothing: when every zone loses every node at once the
// controller is more likely cut off than the nodes dead: it removes the NoExecute
// taints, adds none, and when a node is Ready again it gives every node a fresh grace
// period before any is tainted.
func TestAllZonesFullyDisruptedEvictNothing(t *testing.T) {
	h := newHarness(t)
	a := h.newNodesIn("a", "a", 2)
	b := h.newNodesIn("b", "b", 2)
	all := append(append([]string{}, a...), b...)
	for _, n := range all {
		h.renewLease(n)
	}
	h.sweep()
	// Zone b keeps heartbeating while zone a goes silent: a alone is fully disrupted
	// and tainted unreachable at the normal rate.
	for i := 0; i < 12; i++ {
		h.step(5 * time.Second)
		for _, n := range b {
			h.renewLease(n)
		}
		h.sweep()
	}
	checkTaintedCount(t, h, a, v1.TaintNodeUnreachable, 2, "zone a silent for a minute")
	evictionsBefore := h.zoneMetric(evictionsTotal, "r:a")

	// Now b goes silent too: every zone is fully disrupted.
	h.run(50*time.Second, 5*time.Second)
	for _, n := range all {
		if c := h.condition(n, v1.NodeReady); c.Status != v1.ConditionUnknown {
			t.Fatalf("%s Ready = %s, want Unknown", n, c.Status)
		}
		if taint := h.noExecute(n); taint != nil {
			t.Errorf("%s keeps NoExecute %s while every zone is fully disrupted", n, taint.Key)
		}
		if got := h.noSchedule(n); len(got) != 1 || got[0] != v1.TaintNodeUnreachable {
			t.Errorf("%s NoSchedule %v, want [unreachable] still", n, got)
		}
	}
	h.run(10*time.Minute, 5*time.Second)
	checkTaintedCount(t, h, all, v1.TaintNodeUnreachable, 0, "ten minutes of full disruption")
	if got := h.zoneMetric(evictionsTotal, "r:a") + h.zoneMetric(evictionsTotal, "r:b"); got != evictionsBefore {
		t.Errorf("evictions went from %v to %v during full disruption", evictionsBefore, got)
	}

	// One node of b comes back. Zone b is Normal, zone a still fully disrupted, but
	// the silent nodes get a whole grace period before their taints.
	h.postStatus(b[0])
	h.renewLease(b[0])
	h.sweep()
	if next, ok := h.ctrl.nextDeadline(); !ok || !next.Equal(h.clock.Now().Add(50*time.Second)) {
		t.Errorf("earliest deadline %v, %v after the disruption; want a fresh grace until %v", next, ok, h.clock.Now().Add(50*time.Second))
	}
	for i := 0; i < 9; i++ {
		h.step(5 * time.Second)
		h.renewLease(b[0])
		h.sweep()
	}
	checkTaintedCount(t, h, all, v1.TaintNodeUnreachable, 0, "45 s into the fresh grace period")
	h.step(5 * time.Second)
	h.renewLease(b[0])
	h.sweep()
	// One per zone: zone a is still fully disrupted (normal rate), zone b is Normal.
	if got := h.tainted(all, v1.TaintNodeUnreachable); len(got) != 2 || got[0] != "a-0" || got[1] != "b-1" {
		t.Fatalf("when the fresh grace runs out %v are tainted, want [a-0 b-1] (one per zone)", got)
	}
	h.step(10 * time.Second)
	h.renewLease(b[0])
	h.sweep()
	checkTaintedCount(t, h, all, v1.TaintNodeUnreachable, 3, "10 s later")
}

// TestNoExecuteSwapIsImmediate: a node tainted not-ready that then goes silent gets
// unreachable at once even though its zone has no token, and loses it at once when it
// is Ready again.
func TestNoExecuteSwapIsImmediate(t *testing.T) {
	h := newHarness(t)
	names := h.newNodesIn("n", "a", 10)
	for _, n := range names {
		h.renewLease(n)
	}
	h.sweep()
	// n-0 says NotReady and keeps heartbeating through its Lease; n-1 too, 1 s later,
	// and uses up... nothing: n-0 took the only token.
	h.report(names[0], v1.ConditionFalse)
	h.report(names[1], v1.ConditionFalse)
	h.sweep()
	first := h.noExecute(names[0])
	if first == nil || first.Key != v1.TaintNodeNotReady {
		t.Fatalf("n-0 NoExecute = %v, want not-ready", first)
	}
	if h.noExecute(names[1]) != nil {
		t.Fatal("n-1 tainted without a token")
	}

	// n-0 goes silent; the others keep renewing. 50 s later its Ready is Unknown and
	// the taint is swapped in the same sweep, with a new timeAdded.
	for i := 0; i < 10; i++ {
		h.step(5 * time.Second)
		for _, n := range names[1:] {
			h.renewLease(n)
		}
		h.sweep()
	}
	swapped := h.noExecute(names[0])
	if swapped == nil || swapped.Key != v1.TaintNodeUnreachable {
		t.Fatalf("n-0 NoExecute = %v after going silent, want unreachable", swapped)
	}
	if !swapped.TimeAdded.Time.Equal(h.clock.Now()) {
		t.Errorf("swapped taint timeAdded %v, want now %v", swapped.TimeAdded, h.clock.Now())
	}
	if got := h.zoneMetric(evictionsTotal, "r:a"); got != 2 {
		t.Errorf("evictions = %v, want 2 (n-0 and n-1; a swap is not a new eviction)", got)
	}

	// And back: unreachable -> not-ready when it reports NotReady again, without a token
	// (n-1 took the last one) ...
	h.report(names[0], v1.ConditionFalse)
	h.renewLease(names[0])
	h.ctrl.onNode(h.node(names[0]))
	h.ctrl.reconcileDirty(h.ctx)
	h.resync()
	if got := h.noExecute(names[0]); got == nil || got.Key != v1.TaintNodeNotReady {
		t.Fatalf("n-0 NoExecute = %v after reporting NotReady, want not-ready", got)
	}
	// ... and removed at once when it is Ready.
	h.report(names[0], v1.ConditionTrue)
	h.ctrl.onNode(h.node(names[0]))
	h.ctrl.reconcileDirty(h.ctx)
	h.resync()
	if got := h.noExecute(names[0]); got != nil {
		t.Fatalf("n-0 NoExecute = %v when Ready, want none", got)
	}
}

// TestExcludedNodesDoNotCount: nodes labelled exclude-disruption are left out of zone
// health, so two healthy excluded nodes do not keep a zone out of full disruption,
// and are still tainted themselves.
func TestExcludedNodesDoNotCount(t *testing.T) {
	h := newHarnessWith(t, optsWith(func(o *Options) { o.GracePeriod = time.Hour }))
	names := h.newNodesIn("n", "a", 5)
	for _, n := range names[3:] {
		node := h.node(n)
		node.Labels[labelExcludeDisruption] = ""
		h.putNode(node)
	}
	h.newNodesIn("b", "b", 1)
	h.sweep()
	for _, n := range names[:3] {
		h.report(n, v1.ConditionFalse)
	}
	h.sweep()
	if got := h.zoneMetric("plinth_nodelifecycle_zone_size", "r:a"); got != 3 {
		t.Errorf("zone size = %v, want 3 counted nodes", got)
	}
	h.ctrl.mu.Lock()
	state := h.ctrl.zones["r"+zoneKeySeparator+"a"].state
	h.ctrl.mu.Unlock()
	if state != zoneFullDisruption {
		t.Errorf("zone a is %v, want FullDisruption (its Ready nodes are excluded)", state)
	}
	h.report(names[4], v1.ConditionFalse)
	h.run(40*time.Second, 5*time.Second)
	checkTaintedCount(t, h, append(names[:3:3], names[4]), v1.TaintNodeNotReady, 4, "after 40 s")
}
