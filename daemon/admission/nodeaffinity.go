package admission

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// matchesNodeAffinity: every nodeSelector label equal on the node, and, when the pod
// has a required node affinity, at least one of its terms matching.
func matchesNodeAffinity(in *Input) bool {
	for k, v := range in.Pod.Spec.NodeSelector {
		if got, ok := in.Node.Labels[k]; !ok || got != v {
			return false
		}
	}
	aff := in.Pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, in.Node) {
			return true
		}
	}
	return false
}

// termMatches: a term with neither expressions nor fields matches no node; otherwise
// all its requirements must hold. Fields support only metadata.name.
func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, ok := node.Labels[r.Key]
		if !requirementHolds(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || (r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn) {
			return false
		}
		if !requirementHolds(r, node.Name, true) {
			return false
		}
	}
	return true
}

// requirementHolds evaluates one requirement on a value (present or not). An unknown
// operator or a malformed Gt/Lt never holds.
func requirementHolds(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}
