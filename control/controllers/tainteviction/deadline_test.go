package tainteviction

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestEvictionDeadline(t *testing.T) {
	since := func(tt v1.Taint) time.Time { return tt.TimeAdded.Time }
	unreachable := taintAt(v1.TaintNodeUnreachable, t0)
	notReady := taintAt(v1.TaintNodeNotReady, t0.Add(time.Minute))
	custom := taintAt("example.com/x", t0)
	custom.Value = "v"
	for _, tc := range []struct {
		name        string
		tolerations []v1.Toleration
		taints      []v1.Taint
		evict       bool
		at          time.Time
	}{
		{"no taints", nil, nil, false, time.Time{}},
		{"untolerated: at once", nil, []v1.Taint{unreachable}, true, time.Time{}},
		{"seconds from timeAdded", []v1.Toleration{tolerate(v1.TaintNodeUnreachable, ptr[int64](30))}, []v1.Taint{unreachable}, true, t0.Add(30 * time.Second)},
		{"forever", []v1.Toleration{tolerate(v1.TaintNodeUnreachable, nil)}, []v1.Taint{unreachable}, false, time.Time{}},
		{"negative seconds count as zero", []v1.Toleration{tolerate(v1.TaintNodeUnreachable, ptr[int64](-5))}, []v1.Taint{unreachable}, true, t0},
		{"longest matching toleration of one taint", []v1.Toleration{
			tolerate(v1.TaintNodeUnreachable, ptr[int64](30)), tolerate("", ptr[int64](60)),
		}, []v1.Taint{unreachable}, true, t0.Add(60 * time.Second)},
		{"earliest over taints", []v1.Toleration{
			tolerate(v1.TaintNodeUnreachable, ptr[int64](300)), tolerate(v1.TaintNodeNotReady, ptr[int64](30)),
		}, []v1.Taint{unreachable, notReady}, true, t0.Add(90 * time.Second)},
		{"one untolerated among tolerated", []v1.Toleration{tolerate(v1.TaintNodeUnreachable, ptr[int64](300))},
			[]v1.Taint{unreachable, notReady}, true, time.Time{}},
		{"Equal needs the value", []v1.Toleration{{Key: "example.com/x", Operator: v1.TolerationOpEqual, Value: "w", Effect: v1.TaintEffectNoExecute}},
			[]v1.Taint{custom}, true, time.Time{}},
		{"Equal with the value", []v1.Toleration{{Key: "example.com/x", Value: "v"}}, []v1.Taint{custom}, false, time.Time{}},
		{"NoSchedule toleration does not cover NoExecute", []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			[]v1.Taint{unreachable}, true, time.Time{}},
	} {
		v := evictionDeadline(tc.tolerations, tc.taints, since)
		if v.evict != tc.evict || !v.at.Equal(tc.at) {
			t.Errorf("%s: evict %v at %v, want %v at %v", tc.name, v.evict, v.at, tc.evict, tc.at)
		}
	}
}

func TestSetDisruptionTarget(t *testing.T) {
	var s v1.PodStatus
	if !setDisruptionTarget(&s, metav1Time(t0)) {
		t.Fatal("adding the condition reported no change")
	}
	if setDisruptionTarget(&s, metav1Time(t0.Add(time.Minute))) {
		t.Fatal("setting it again reported a change")
	}
	if got := s.Conditions[0].LastTransitionTime.Time; !got.Equal(t0) {
		t.Errorf("transition time moved to %v", got)
	}
	s.Conditions[0].Status = v1.ConditionFalse
	if !setDisruptionTarget(&s, metav1Time(t0.Add(time.Minute))) || len(s.Conditions) != 1 || s.Conditions[0].Status != v1.ConditionTrue {
		t.Errorf("a False condition was not turned True in place: %+v", s.Conditions)
	}
}
