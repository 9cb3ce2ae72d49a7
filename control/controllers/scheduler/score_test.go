package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func usageOf(pods ...*v1.Pod) nodeUsage {
	u := nodeUsage{requests: amounts{}}
	for _, p := range pods {
		u.add(demandOf(p), 1)
	}
	return u
}

func TestLeastAllocatedScore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage nodeUsage
		pod   *v1.Pod
		want  int64
	}{
		// 4 cpu, 8 GiB: 1 cpu and 2 GiB leave 75% of each.
		{"empty node", usageOf(), newPod("p", "1", "2Gi"), 75},
		{"half used", usageOf(newPod("x", "1", "2Gi")), newPod("p", "1", "2Gi"), 50},
		{"cpu and memory weigh the same", usageOf(), newPod("p", "4", "0"), (0 + 97) / 2},
		{"a pod without requests counts the defaults", usageOf(), newPod("p", "", ""), (97 + 97) / 2},
		{"over allocatable scores zero", usageOf(newPod("x", "8", "16Gi")), newPod("p", "1", "1Gi"), 0},
	} {
		got := leastAllocatedScore(demandOf(tc.pod), candidate{node: readyNode("n1"), usage: tc.usage})
		if got != tc.want {
			t.Errorf("%s: score %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPickNodeTakesTheLeastAllocatedAndBreaksTiesByName(t *testing.T) {
	p := newPod("p", "500m", "1Gi")
	busy := candidate{node: readyNode("a-busy"), usage: usageOf(newPod("x", "2", "4Gi"))}
	idle1 := candidate{node: readyNode("c-idle"), usage: usageOf()}
	idle2 := candidate{node: readyNode("b-idle"), usage: usageOf()}
	for _, order := range [][]candidate{{busy, idle1, idle2}, {idle2, idle1, busy}, {idle1, busy, idle2}} {
		if got := pickNode(p, order); got.node != "b-idle" {
			t.Fatalf("picked %q, want b-idle (least allocated, then first by name)", got.node)
		}
	}
	tainted := readyNode("b-idle")
	tainted.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
	if got := pickNode(p, []candidate{busy, idle1, {node: tainted}}); got.node != "c-idle" {
		t.Fatalf("picked %q, want c-idle once b-idle is tainted", got.node)
	}
}

func TestFailureMessageReadsLikeKubeScheduler(t *testing.T) {
	p := newPod("p", "1", "6Gi")
	tainted := readyNode("n1")
	tainted.Spec.Taints = []v1.Taint{{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}}
	full := usageOf(newPod("x", "1", "4Gi"))
	got := pickNode(p, []candidate{{node: tainted}, {node: readyNode("n2"), usage: full}, {node: readyNode("n3"), usage: full}})
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient memory."
	if got.node != "" || got.message != want {
		t.Fatalf("got node %q, message\n%q\nwant\n%q", got.node, got.message, want)
	}
	if got := pickNode(p, nil); got.message != "0/0 nodes are available: no nodes available to schedule pods." {
		t.Fatalf("no nodes: %q", got.message)
	}
}

func TestUsageBookCountsAssumedPodsOnce(t *testing.T) {
	b := newUsageBook()
	p := newPod("p", "1", "1Gi")
	b.assume(p, "n1")
	if u := b.usage("n1"); u.pods != 1 || u.requests[v1.ResourceCPU] != 1000 {
		t.Fatalf("after assume: %+v", u)
	}
	// A stale cache event of the pod still unbound leaves the assumption standing.
	b.observe(p, false)
	if u := b.usage("n1"); u.pods != 1 {
		t.Fatalf("a stale unbound event dropped the assumption: %+v", u)
	}
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	bound.Status.Phase = v1.PodRunning
	b.observe(bound, false)
	if u := b.usage("n1"); u.pods != 1 || u.requests[v1.ResourceCPU] != 1000 || b.isAssumed(keyOf(p), p.UID) {
		t.Fatalf("once the cache shows it bound it counts once: %+v", u)
	}
	done := bound.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	b.observe(done, false)
	if u := b.usage("n1"); u.pods != 0 || u.requests[v1.ResourceCPU] != 0 {
		t.Fatalf("a finished pod still counts: %+v", u)
	}
	b.assume(newPod("q", "1", ""), "n2")
	b.forget(newPod("q", "1", ""))
	if u := b.usage("n2"); u.pods != 0 {
		t.Fatalf("a failed binding still counts: %+v", u)
	}
}
