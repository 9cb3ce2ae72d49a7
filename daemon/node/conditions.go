package node

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionSource supplies node conditions, such as the memory, disk and PID pressure
// conditions the pressure subsystem computes. Only Type, Status, Reason and Message are
// read; the Agent keeps the heartbeat and transition times. A Ready condition from the
// source replaces the Agent's own.
type ConditionSource interface {
	Conditions() []corev1.NodeCondition
}

// ConditionNotifier is implemented by a ConditionSource that knows when its conditions
// change (the pressure manager does). RunStatus then posts status as soon as a value
// arrives instead of at its next period, so a pressure condition reaches the API
// within the time of one status update rather than up to StatusUpdateFrequency later.
type ConditionNotifier interface {
	Changed() <-chan struct{}
}

// Reasons and messages of the conditions plinthd reports, in kubelet's shape with the
// Plinthd prefix.
const (
	ReasonReady = "PlinthdReady"
	// ReasonNotReady is kubelet's KubeletNotReady: the message says why (graceful node
	// shutdown's "node is shutting down").
	ReasonNotReady             = "PlinthdNotReady"
	MessageReady               = "plinthd is posting ready status"
	ReasonHasSufficientMemory  = "PlinthdHasSufficientMemory"
	MessageHasSufficientMemory = "plinthd has sufficient memory available"
	ReasonHasNoDiskPressure    = "PlinthdHasNoDiskPressure"
	MessageHasNoDiskPressure   = "plinthd has no disk pressure"
	ReasonHasSufficientPID     = "PlinthdHasSufficientPID"
	MessageHasSufficientPID    = "plinthd has sufficient PID available"
)

// NoPressure is the ConditionSource to use until pressure is measured: memory, disk and
// PID pressure all False.
type NoPressure struct{}

// Conditions implements ConditionSource.
func (NoPressure) Conditions() []corev1.NodeCondition {
	return []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: ReasonHasSufficientMemory, Message: MessageHasSufficientMemory},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: ReasonHasNoDiskPressure, Message: MessageHasNoDiskPressure},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: ReasonHasSufficientPID, Message: MessageHasSufficientPID},
	}
}

// desiredConditions is the source's conditions followed by Ready (kubelet's order),
// unless the source supplied its own Ready.
func desiredConditions(src ConditionSource) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	haveReady := false
	if src != nil {
		for _, c := range src.Conditions() {
			out = append(out, corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
			haveReady = haveReady || c.Type == corev1.NodeReady
		}
	}
	if !haveReady {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: ReasonReady, Message: MessageReady})
	}
	return out
}

// mergeConditions applies want onto have (a Node's status.conditions) and reports
// whether a status, reason or message differed or a condition was missing. A
// condition's lastTransitionTime moves to now only when its status changes (or it is
// new); conditions of other types are kept as they are. Heartbeat times are left to
// stampHeartbeat, since only a report sets them.
func mergeConditions(have []corev1.NodeCondition, want []corev1.NodeCondition, now metav1.Time) ([]corev1.NodeCondition, bool) {
	out := make([]corev1.NodeCondition, len(have))
	copy(out, have)
	changed := false
	for _, w := range want {
		i := conditionIndex(out, w.Type)
		if i < 0 {
			w.LastTransitionTime = now
			w.LastHeartbeatTime = now
			out = append(out, w)
			changed = true
			continue
		}
		h := &out[i]
		if h.Status != w.Status {
			h.Status = w.Status
			h.LastTransitionTime = now
			changed = true
		}
		if h.Reason != w.Reason || h.Message != w.Message {
			h.Reason, h.Message = w.Reason, w.Message
			changed = true
		}
	}
	return out, changed
}

// stampHeartbeat sets lastHeartbeatTime of the conditions whose type is in want.
func stampHeartbeat(conds []corev1.NodeCondition, want []corev1.NodeCondition, now metav1.Time) {
	for _, w := range want {
		if i := conditionIndex(conds, w.Type); i >= 0 {
			conds[i].LastHeartbeatTime = now
		}
	}
}

func conditionIndex(conds []corev1.NodeCondition, t corev1.NodeConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}
