package nodelifecycle

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reasons and messages match the Kubernetes node controller's, with the node agent's
// name, so tools that look for the reasons keep working.
const (
	reasonUnknown       = "NodeStatusUnknown"
	messageUnknown      = "plinthd stopped posting node status."
	reasonNeverUpdated  = "NodeStatusNeverUpdated"
	messageNeverUpdated = "plinthd never posted node status."
)

// monitoredConditions are the conditions only a live node agent can vouch for.
func monitoredConditions() [4]v1.NodeConditionType {
	return [4]v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}
}

// conditionsAllUnknown reports whether every monitored condition is present and Unknown,
// in which case there is nothing to write.
func conditionsAllUnknown(status *v1.NodeStatus) bool {
	for _, t := range monitoredConditions() {
		i := conditionIndex(status.Conditions, t)
		if i < 0 || status.Conditions[i].Status != v1.ConditionUnknown {
			return false
		}
	}
	return true
}

// markConditionsUnknown sets every monitored condition in status to Unknown and returns
// the types it changed. A condition already Unknown is left exactly as it is, so a
// repeated call changes nothing. lastHeartbeatTime is kept (it is the node's last word);
// a condition the node never posted is added with the node's creation time as its
// heartbeat, as the Kubernetes node controller does.
func markConditionsUnknown(status *v1.NodeStatus, created, now metav1.Time) []v1.NodeConditionType {
	var changed []v1.NodeConditionType
	for _, t := range monitoredConditions() {
		i := conditionIndex(status.Conditions, t)
		if i < 0 {
			status.Conditions = append(status.Conditions, v1.NodeCondition{
				Type:               t,
				Status:             v1.ConditionUnknown,
				Reason:             reasonNeverUpdated,
				Message:            messageNeverUpdated,
				LastHeartbeatTime:  created,
				LastTransitionTime: now,
			})
			changed = append(changed, t)
			continue
		}
		c := &status.Conditions[i]
		if c.Status == v1.ConditionUnknown {
			continue
		}
		c.Status = v1.ConditionUnknown
		c.Reason = reasonUnknown
		c.Message = messageUnknown
		c.LastTransitionTime = now
		changed = append(changed, t)
	}
	return changed
}

func conditionIndex(conds []v1.NodeCondition, t v1.NodeConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}
