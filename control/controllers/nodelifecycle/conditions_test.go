package nodelifecycle

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMarkConditionsUnknown(t *testing.T) {
	created := metav1.NewTime(t0.Add(-sec(3600)))
	hb := metav1.NewTime(t0.Add(-sec(100)))
	old := metav1.NewTime(t0.Add(-sec(1000)))
	now := metav1.NewTime(t0)

	status := v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "PlinthdReady", Message: "ok", LastHeartbeatTime: hb, LastTransitionTime: old},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "NoPressure", LastHeartbeatTime: hb, LastTransitionTime: old},
		// Already Unknown: must be left exactly as it is.
		{Type: v1.NodeDiskPressure, Status: v1.ConditionUnknown, Reason: "SomethingElse", Message: "m", LastHeartbeatTime: hb, LastTransitionTime: old},
		// Not a monitored condition: untouched.
		{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: old},
		// PIDPressure missing: added as never updated.
	}}
	if conditionsAllUnknown(&status) {
		t.Fatal("conditionsAllUnknown true for a Ready=True node")
	}
	changed := markConditionsUnknown(&status, created, now)
	wantChanged := []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodePIDPressure}
	if !reflect.DeepEqual(changed, wantChanged) {
		t.Errorf("changed = %v, want %v", changed, wantChanged)
	}
	want := []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: reasonUnknown, Message: messageUnknown, LastHeartbeatTime: hb, LastTransitionTime: now},
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionUnknown, Reason: reasonUnknown, Message: messageUnknown, LastHeartbeatTime: hb, LastTransitionTime: now},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionUnknown, Reason: "SomethingElse", Message: "m", LastHeartbeatTime: hb, LastTransitionTime: old},
		{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: old},
		{Type: v1.NodePIDPressure, Status: v1.ConditionUnknown, Reason: reasonNeverUpdated, Message: messageNeverUpdated, LastHeartbeatTime: created, LastTransitionTime: now},
	}
	if !reflect.DeepEqual(status.Conditions, want) {
		t.Errorf("conditions:\n got %+v\nwant %+v", status.Conditions, want)
	}
	if !conditionsAllUnknown(&status) {
		t.Error("conditionsAllUnknown false after marking")
	}

	// Idempotent: a second pass at a later time changes nothing.
	before := append([]v1.NodeCondition(nil), status.Conditions...)
	if again := markConditionsUnknown(&status, created, metav1.NewTime(t0.Add(sec(60)))); len(again) != 0 {
		t.Errorf("second pass changed %v", again)
	}
	if !reflect.DeepEqual(status.Conditions, before) {
		t.Error("second pass rewrote conditions")
	}
}

func TestMarkConditionsUnknownEmptyStatus(t *testing.T) {
	var status v1.NodeStatus
	changed := markConditionsUnknown(&status, metav1.NewTime(t0), metav1.NewTime(t0.Add(sec(60))))
	if len(changed) != 4 || len(status.Conditions) != 4 {
		t.Fatalf("changed %v, conditions %d; want all four added", changed, len(status.Conditions))
	}
	for _, c := range status.Conditions {
		if c.Status != v1.ConditionUnknown || c.Reason != reasonNeverUpdated || c.Message != messageNeverUpdated {
			t.Errorf("%s: %s/%s/%q, want Unknown/%s/%q", c.Type, c.Status, c.Reason, c.Message, reasonNeverUpdated, messageNeverUpdated)
		}
	}
}
