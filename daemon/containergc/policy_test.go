package containergc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// fakePods maps pod UIDs to their state; ready is AllSourcesReady.
type fakePods struct {
	states map[types.UID]PodState
	ready  bool
}

func (f fakePods) PodState(uid types.UID) PodState { return f.states[uid] }
func (f fakePods) AllSourcesReady() bool           { return f.ready }

// dc makes a dead container of pod/name created age before t0; its ID is
// pod/name/age so plans read easily.
func dc(pod, name string, age time.Duration) Container {
	return Container{ID: fmt.Sprintf("%s/%s/%s", pod, name, age), PodUID: types.UID(pod), Name: name, Created: t0.Add(-age)}
}

func ids(rs []Removal) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Container.ID + "=" + r.Reason
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	live := fakePods{ready: true}
	deletedA := fakePods{ready: true, states: map[types.UID]PodState{"a": {Deleted: true}}}
	terminatedA := fakePods{ready: true, states: map[types.UID]PodState{"a": {Terminated: true}}}
	m := time.Minute
	tests := []struct {
		name   string
		policy Policy
		dead   []Container
		pods   fakePods
		opts   Options
		want   string
	}{
		{"nothing dead", DefaultPolicy(), nil, live, Options{}, ""},
		{"one dead container per name is kept", DefaultPolicy(),
			[]Container{dc("a", "app", m), dc("a", "side", 2*m), dc("b", "app", 3*m)}, live, Options{}, ""},
		{"older restarts of the same container go, oldest first", DefaultPolicy(),
			[]Container{dc("a", "app", 2*m), dc("a", "app", 1*m), dc("a", "app", 3*m)}, live, Options{},
			"a/app/3m0s=max_per_pod_container a/app/2m0s=max_per_pod_container"},
		{"MaxPerPodContainer 2", Policy{MaxPerPodContainer: 2, MaxContainers: -1},
			[]Container{dc("a", "app", 2*m), dc("a", "app", 1*m), dc("a", "app", 3*m)}, live, Options{},
			"a/app/3m0s=max_per_pod_container"},
		{"MaxPerPodContainer 0 removes all", Policy{MaxPerPodContainer: 0, MaxContainers: -1},
			[]Container{dc("a", "app", 2*m), dc("b", "app", 1*m)}, live, Options{},
			"a/app/2m0s=max_per_pod_container b/app/1m0s=max_per_pod_container"},
		{"negative limits keep everything", Policy{MaxPerPodContainer: -1, MaxContainers: -1},
			[]Container{dc("a", "app", 2*m), dc("a", "app", 1*m)}, live, Options{}, ""},
		{"MinAge protects young containers", Policy{MinAge: 90 * time.Second, MaxPerPodContainer: 0, MaxContainers: -1},
			[]Container{dc("a", "app", 2*m), dc("a", "app", 1*m), dc("a", "app", 90*time.Second)}, live, Options{},
			"a/app/2m0s=max_per_pod_container a/app/1m30s=max_per_pod_container"},
		{"MinAge: young containers do not count against the per-name limit", Policy{MinAge: 90 * time.Second, MaxPerPodContainer: 1, MaxContainers: -1},
			[]Container{dc("a", "app", 3*m), dc("a", "app", 2*m), dc("a", "app", 1*m)}, live, Options{},
			"a/app/3m0s=max_per_pod_container"},
		{"deleted pod: every container, whatever the per-name limit", DefaultPolicy(),
			[]Container{dc("a", "app", 1*m), dc("a", "side", 2*m), dc("b", "app", 3*m)}, deletedA, Options{},
			"a/app/1m0s=deleted_pod a/side/2m0s=deleted_pod"},
		{"deleted pod: but not before MinAge", Policy{MinAge: 2 * m, MaxPerPodContainer: 1, MaxContainers: -1},
			[]Container{dc("a", "app", 1*m), dc("a", "side", 2*m)}, deletedA, Options{},
			"a/side/2m0s=deleted_pod"},
		{"deleted pod: not until all sources are ready", DefaultPolicy(),
			[]Container{dc("a", "app", 1*m), dc("a", "app", 2*m)}, fakePods{states: deletedA.states}, Options{},
			"a/app/2m0s=max_per_pod_container"},
		{"terminated pod: per-name limit only in a periodic run", DefaultPolicy(),
			[]Container{dc("a", "app", 1*m), dc("a", "app", 2*m)}, terminatedA, Options{},
			"a/app/2m0s=max_per_pod_container"},
		{"terminated pod: everything when reclaiming for disk pressure", DefaultPolicy(),
			[]Container{dc("a", "app", 1*m), dc("a", "app", 2*m), dc("b", "app", 3*m)}, terminatedA, Options{EvictTerminatedPods: true},
			"a/app/2m0s=deleted_pod a/app/1m0s=deleted_pod"},
		{"MaxContainers within bounds changes nothing", Policy{MaxPerPodContainer: 2, MaxContainers: 4},
			[]Container{dc("a", "x", 1*m), dc("a", "x", 2*m), dc("b", "x", 3*m), dc("b", "x", 4*m)}, live, Options{}, ""},
		{"MaxContainers lowers the per-name limit to an even share", Policy{MaxPerPodContainer: 3, MaxContainers: 4},
			// 2 groups of 3: share 4/2 = 2 each, so each group loses its oldest.
			[]Container{dc("a", "x", 1*m), dc("a", "x", 2*m), dc("a", "x", 3*m), dc("b", "x", 4*m), dc("b", "x", 5*m), dc("b", "x", 6*m)}, live, Options{},
			"a/x/3m0s=max_containers b/x/6m0s=max_containers"},
		{"MaxContainers below the number of groups: one each, then oldest first overall", Policy{MaxPerPodContainer: 3, MaxContainers: 2},
			// 3 groups: share 2/3 = 0, raised to 1; 3 left > 2, so the oldest survivor goes.
			[]Container{dc("a", "x", 1*m), dc("a", "x", 5*m), dc("b", "x", 2*m), dc("c", "x", 3*m), dc("c", "x", 4*m)}, live, Options{},
			"a/x/5m0s=max_containers c/x/4m0s=max_containers c/x/3m0s=max_containers"},
		{"MaxContainers 0 removes everything", Policy{MaxPerPodContainer: 1, MaxContainers: 0},
			[]Container{dc("a", "x", 1*m), dc("b", "x", 2*m)}, live, Options{},
			"b/x/2m0s=max_containers a/x/1m0s=max_containers"}, // oldest first
		{"MaxContainers without a per-name limit", Policy{MaxPerPodContainer: -1, MaxContainers: 3},
			// 2 groups: share 1 each, leaving 2 <= 3.
			[]Container{dc("a", "x", 1*m), dc("a", "x", 2*m), dc("a", "x", 3*m), dc("b", "x", 4*m), dc("b", "x", 5*m)}, live, Options{},
			"a/x/3m0s=max_containers a/x/2m0s=max_containers b/x/5m0s=max_containers"},
		{"deleted pods go before the MaxContainers share is computed", Policy{MaxPerPodContainer: 2, MaxContainers: 2},
			[]Container{dc("a", "x", 1*m), dc("a", "x", 2*m), dc("b", "x", 3*m), dc("b", "x", 4*m)}, deletedA, Options{},
			"a/x/2m0s=deleted_pod a/x/1m0s=deleted_pod"},
		{"unknown state is passed on", DefaultPolicy(),
			[]Container{dc("a", "x", 1*m), {ID: "u", PodUID: "a", Name: "x", Created: t0.Add(-2 * m), Unknown: true}}, live, Options{},
			"u=max_per_pod_container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.dead)
			got := Plan(tt.policy, in, tt.pods, t0, tt.opts)
			if ids(got) != tt.want {
				t.Errorf("Plan =\n  %s\nwant\n  %s", ids(got), tt.want)
			}
			for _, r := range got {
				if r.Container.ID == "u" && !r.Container.Unknown {
					t.Errorf("Unknown lost")
				}
			}
		})
	}
}

func TestPlanSandboxes(t *testing.T) {
	sb := func(pod string, age time.Duration, active bool) Sandbox {
		return Sandbox{ID: fmt.Sprintf("%s/%s", pod, age), PodUID: types.UID(pod), Created: t0.Add(-age), Active: active}
	}
	m := time.Minute
	pods := fakePods{ready: true, states: map[types.UID]PodState{"gone": {Deleted: true}, "done": {Terminated: true}}}
	all := []Sandbox{
		sb("live", 1*m, true), sb("live", 2*m, false), sb("live", 3*m, false),
		sb("old", 1*m, false), sb("old", 2*m, false),
		sb("gone", 1*m, false), sb("gone", 2*m, true),
		sb("done", 1*m, false), sb("done", 2*m, false),
	}
	names := func(ss []Sandbox) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return strings.Join(out, " ")
	}
	// Per pod in UID order, oldest first; the newest of a live pod stays, active ones always.
	if got, want := names(PlanSandboxes(all, pods, Options{})), "done/2m0s gone/1m0s live/3m0s live/2m0s old/2m0s"; got != want {
		t.Errorf("PlanSandboxes = %q, want %q", got, want)
	}
	if got, want := names(PlanSandboxes(all, pods, Options{EvictTerminatedPods: true})), "done/2m0s done/1m0s gone/1m0s live/3m0s live/2m0s old/2m0s"; got != want {
		t.Errorf("PlanSandboxes with terminated = %q, want %q", got, want)
	}
}

func TestPlanLogDirs(t *testing.T) {
	dirs := []PodLogDir{{"a", "/var/log/pods/ns_a_a"}, {"b", "/var/log/pods/ns_b_b"}}
	pods := fakePods{ready: true, states: map[types.UID]PodState{"b": {Deleted: true}, "a": {Terminated: true}}}
	if got := PlanLogDirs(dirs, pods); len(got) != 1 || got[0].PodUID != "b" {
		t.Errorf("PlanLogDirs = %v, want only b's", got)
	}
	pods.ready = false
	if got := PlanLogDirs(dirs, pods); len(got) != 0 {
		t.Errorf("before all sources are ready: %v", got)
	}
}
