package shutdown

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func groupNames(groups []Group) map[int32][]string {
	out := map[int32][]string{}
	for _, g := range groups {
		out[g.Priority] = nil
		for _, p := range g.Pods {
			out[g.Priority] = append(out[g.Priority], p.Name)
		}
	}
	return out
}

func TestPlanPutsEachPodInTheHighestBandAtOrBelowItsPriority(t *testing.T) {
	bands := []Band{ // unsorted on purpose
		{Priority: 2000000000, GracePeriod: 10 * time.Second},
		{Priority: 0, GracePeriod: 20 * time.Second},
		{Priority: 1000, GracePeriod: 5 * time.Second},
		{Priority: 5000, GracePeriod: 7 * time.Second},
	}
	pods := []*corev1.Pod{
		pod("negative", prio(-10), "", 30),   // below every band: the lowest
		pod("none", nil, "", 30),             // no priority: 0
		pod("just-below", prio(999), "", 30), // band 0
		pod("boundary", prio(1000), "", 30),  // exactly a band's priority
		pod("node-critical", nil, "system-node-critical", 30),
		pod("cluster-critical", nil, "system-cluster-critical", 30),
		pod("huge", prio(2100000000), "", 30),       // above every band: the highest
		pod("user-class", nil, "high-priority", 30), // an unresolved user class: 0
	}
	groups := Plan(bands, pods)
	var order []int32
	for _, g := range groups {
		order = append(order, g.Priority)
	}
	if !slices.Equal(order, []int32{0, 1000, 5000, 2000000000}) {
		t.Fatalf("groups in order %v, want lowest priority first", order)
	}
	got := groupNames(groups)
	want := map[int32][]string{
		0:          {"negative", "none", "just-below", "user-class"},
		1000:       {"boundary"},
		5000:       nil, // empty, kept so the caller can skip it
		2000000000: {"node-critical", "cluster-critical", "huge"},
	}
	for p, names := range want {
		if !slices.Equal(got[p], names) {
			t.Errorf("band %d holds %v, want %v", p, got[p], names)
		}
	}
	if groups[0].GracePeriod != 20*time.Second || groups[3].GracePeriod != 10*time.Second {
		t.Errorf("bands lost their periods: %+v", groups)
	}
}

func TestPlanWithoutBandsIsEmpty(t *testing.T) {
	if g := Plan(nil, []*corev1.Pod{pod("a", nil, "", 30)}); len(g) != 0 {
		t.Errorf("Plan(nil) = %v", g)
	}
}

func TestPodGracePeriodIsTheShorterOfBandAndPod(t *testing.T) {
	b := Band{GracePeriod: 20 * time.Second}
	for _, tc := range []struct {
		podSeconds *int64
		want       time.Duration
	}{
		{nil, 20 * time.Second},
		{ptr(int64(5)), 5 * time.Second},
		{ptr(int64(60)), 20 * time.Second},
		{ptr(int64(0)), 0},
	} {
		p := pod("p", nil, "", 0)
		p.Spec.TerminationGracePeriodSeconds = tc.podSeconds
		if got := podGracePeriod(b, p); got != tc.want {
			t.Errorf("pod grace %v in a 20s band: %v, want %v", tc.podSeconds, got, tc.want)
		}
	}
}

func TestTotalGracePeriod(t *testing.T) {
	if got := TotalGracePeriod([]Band{{0, 20 * time.Second}, {10, 0}, {2000000000, 10 * time.Second}}); got != 30*time.Second {
		t.Errorf("TotalGracePeriod = %v, want 30s", got)
	}
}

func ptr[T any](v T) *T { return &v }
