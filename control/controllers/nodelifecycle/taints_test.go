package nodelifecycle

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWantedNoSchedule(t *testing.T) {
	cond := func(ct v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: ct, Status: s}
	}
	for _, tc := range []struct {
		name          string
		conds         []v1.NodeCondition
		unschedulable bool
		want          []string
	}{
		{"healthy", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionTrue), cond(v1.NodeMemoryPressure, v1.ConditionFalse)}, false, nil},
		{"not ready", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionFalse)}, false, []string{v1.TaintNodeNotReady}},
		{"unknown", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionUnknown), cond(v1.NodeDiskPressure, v1.ConditionUnknown)}, false, []string{v1.TaintNodeUnreachable}},
		{"pressures", []v1.NodeCondition{
			cond(v1.NodeReady, v1.ConditionTrue), cond(v1.NodeMemoryPressure, v1.ConditionTrue), cond(v1.NodeDiskPressure, v1.ConditionTrue),
			cond(v1.NodePIDPressure, v1.ConditionTrue), cond(v1.NodeNetworkUnavailable, v1.ConditionTrue),
		}, false, []string{v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure, v1.TaintNodePIDPressure, v1.TaintNodeNetworkUnavailable}},
		{"cordoned", nil, true, []string{v1.TaintNodeUnschedulable}},
	} {
		node := &v1.Node{Spec: v1.NodeSpec{Unschedulable: tc.unschedulable}, Status: v1.NodeStatus{Conditions: tc.conds}}
		var got []string
		for k := range wantedNoSchedule(node) {
			got = append(got, k)
		}
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}

func TestPlanTaints(t *testing.T) {
	now := metav1.NewTime(t0)
	earlier := metav1.NewTime(t0.Add(-time.Minute))
	foreignNS := v1.Taint{Key: "example.com/dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}
	foreignNE := v1.Taint{Key: "example.com/maintenance", Effect: v1.TaintEffectNoExecute}
	// A not-ready PreferNoSchedule taint is not ours (wrong effect): it stays.
	foreignPref := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectPreferNoSchedule}
	notReadyNE := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute, TimeAdded: &earlier}
	unreachableNE := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &earlier}
	ns := func(k string) v1.Taint { return v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule} }
	ne := func(k string) v1.Taint { return v1.Taint{Key: k, Effect: v1.TaintEffectNoExecute, TimeAdded: &now} }

	for _, tc := range []struct {
		name    string
		current []v1.Taint
		want    map[string]bool
		intent  noExecuteIntent
		result  []v1.Taint
		pending bool
	}{
		{
			name:    "nothing to do keeps foreign taints",
			current: []v1.Taint{foreignNS, foreignNE, foreignPref},
			result:  []v1.Taint{foreignNS, foreignNE, foreignPref},
		},
		{
			name:    "NoSchedule added after foreign taints",
			current: []v1.Taint{foreignNS},
			want:    map[string]bool{v1.TaintNodeMemoryPressure: true, v1.TaintNodeUnschedulable: true},
			result:  []v1.Taint{foreignNS, ns(v1.TaintNodeMemoryPressure), ns(v1.TaintNodeUnschedulable)},
		},
		{
			name:    "NoSchedule removed, others kept in place",
			current: []v1.Taint{ns(v1.TaintNodeDiskPressure), foreignNS, ns(v1.TaintNodeUnschedulable)},
			want:    map[string]bool{v1.TaintNodeUnschedulable: true},
			result:  []v1.Taint{foreignNS, ns(v1.TaintNodeUnschedulable)},
		},
		{
			name:    "NoExecute held back without mayAdd",
			current: []v1.Taint{foreignNE},
			intent:  noExecuteIntent{key: v1.TaintNodeNotReady},
			result:  []v1.Taint{foreignNE},
			pending: true,
		},
		{
			name:   "NoExecute added with mayAdd and timeAdded now",
			intent: noExecuteIntent{key: v1.TaintNodeUnreachable, mayAdd: true},
			result: []v1.Taint{ne(v1.TaintNodeUnreachable)},
		},
		{
			name:    "NoExecute kept with its timeAdded",
			current: []v1.Taint{notReadyNE},
			intent:  noExecuteIntent{key: v1.TaintNodeNotReady},
			result:  []v1.Taint{notReadyNE},
		},
		{
			name:    "swap needs no mayAdd",
			current: []v1.Taint{foreignNE, notReadyNE},
			intent:  noExecuteIntent{key: v1.TaintNodeUnreachable},
			result:  []v1.Taint{foreignNE, ne(v1.TaintNodeUnreachable)},
		},
		{
			name:    "both removed when Ready",
			current: []v1.Taint{unreachableNE, foreignNE, notReadyNE},
			result:  []v1.Taint{foreignNE},
		},
		{
			name:    "duplicate owned taints collapse",
			current: []v1.Taint{ns(v1.TaintNodeUnschedulable), ns(v1.TaintNodeUnschedulable)},
			want:    map[string]bool{v1.TaintNodeUnschedulable: true},
			result:  []v1.Taint{ns(v1.TaintNodeUnschedulable)},
		},
	} {
		p := planTaints(tc.current, tc.want, tc.intent, now)
		if !equalTaints(p.taints, tc.result) {
			t.Errorf("%s: taints %v, want %v", tc.name, p.taints, tc.result)
		}
		if p.pending != tc.pending {
			t.Errorf("%s: pending %v, want %v", tc.name, p.pending, tc.pending)
		}
		if wantChanged := !equalTaints(tc.current, tc.result); p.changed != wantChanged {
			t.Errorf("%s: changed %v, want %v", tc.name, p.changed, wantChanged)
		}
		// Planning again from the result changes nothing.
		again := planTaints(p.taints, tc.want, noExecuteIntent{key: tc.intent.key}, metav1.NewTime(t0.Add(time.Hour)))
		if again.changed {
			t.Errorf("%s: second plan changed %v/%v", tc.name, again.added, again.removed)
		}
	}
}

func equalTaints(a, b []v1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y v1.Taint) bool {
		return x.MatchTaint(&y) && x.Value == y.Value && x.TimeAdded.Equal(y.TimeAdded)
	})
}
