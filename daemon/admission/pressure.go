package admission

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/internal/podqos"
)

// pressureConditions are the node conditions the eviction manager sets, in the order
// messages list them.
var pressureConditions = []corev1.NodeConditionType{
	corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// PressureFromNode returns the pressure conditions that are True in the node's status,
// for Input.Pressure when the eviction manager's own view is not at hand.
func PressureFromNode(node *corev1.Node) []corev1.NodeConditionType {
	if node == nil {
		return nil
	}
	var out []corev1.NodeConditionType
	for _, t := range pressureConditions {
		for _, c := range node.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// IsCritical reports whether kubelet treats the pod as critical: a static pod, its
// mirror pod, or a priority of at least system-cluster-critical (2000000000).
func IsCritical(pod *corev1.Pod) bool { return pressure.IsCritical(pod) }

// memoryPressureTaint is the taint whose toleration lets a BestEffort pod start under
// memory pressure.
var memoryPressureTaint = corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}

// admitUnderPressure is kubelet's eviction admit handler. Memory pressure alone only
// turns away BestEffort pods (they would be the first evicted) unless they tolerate the
// memory-pressure taint; disk or PID pressure turns away every pod. Critical pods are
// always admitted: the node needs them to recover.
func admitUnderPressure(in *Input) Result {
	conds := slices.DeleteFunc(slices.Clone(in.Pressure), func(t corev1.NodeConditionType) bool {
		return !slices.Contains(pressureConditions, t)
	})
	if len(conds) == 0 || IsCritical(in.Pod) {
		return admitted
	}
	if len(conds) == 1 && conds[0] == corev1.NodeMemoryPressure {
		if podqos.Class(in.Pod) != corev1.PodQOSBestEffort || tolerates(in.Pod.Spec.Tolerations, &memoryPressureTaint) {
			return admitted
		}
	}
	// Kubelet's text, without the trailing space its format string leaves.
	return refuse(ReasonEvicted, fmt.Sprintf("The node had condition: %v.", conds))
}

func tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return true
		}
	}
	return false
}
