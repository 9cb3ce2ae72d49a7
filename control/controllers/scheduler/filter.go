package scheduler

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// The reasons a node is refused, worded as kube-scheduler words them, so the
// FailedScheduling message reads the same.
const (
	reasonNotReady      = "node(s) were not ready"
	reasonUnschedulable = "node(s) were unschedulable"
	reasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
	reasonMemPressure   = "node(s) had memory pressure"
	reasonDiskPressure  = "node(s) had disk pressure"
	reasonPIDPressure   = "node(s) had pid pressure"
	reasonTooManyPods   = "Too many pods"
)

func reasonTaint(t v1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

func reasonInsufficient(name v1.ResourceName) string { return "Insufficient " + string(name) }

// candidate is a node with what is already placed on it.
type candidate struct {
	node  *v1.Node
	usage nodeUsage
}

// filter returns why the pod cannot go to the node; none means it fits. The first
// failing check decides, except resources, which list every one that is short.
func filter(pod *v1.Pod, demand podDemand, c candidate) []string {
	node := c.node
	// Conditions refuse a node unless the pod tolerates the NoSchedule taint the node
	// lifecycle controller sets for the same condition (as DaemonSet pods do).
	switch condition(node, v1.NodeReady) {
	case v1.ConditionTrue:
	case v1.ConditionFalse:
		if !tolerates(pod, v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}) {
			return []string{reasonNotReady}
		}
	default:
		if !tolerates(pod, v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoSchedule}) {
			return []string{reasonNotReady}
		}
	}
	if node.Spec.Unschedulable && !tolerates(pod, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
		return []string{reasonUnschedulable}
	}
	for _, t := range node.Spec.Taints {
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue // PreferNoSchedule only steers
		}
		if !tolerates(pod, t) {
			return []string{reasonTaint(t)}
		}
	}
	if !matchesNodeSelector(pod, node) {
		return []string{reasonAffinity}
	}
	pressure := []struct {
		cond   v1.NodeConditionType
		taint  string
		reason string
		refuse bool
	}{
		{v1.NodeMemoryPressure, v1.TaintNodeMemoryPressure, reasonMemPressure, bestEffort(pod)},
		{v1.NodeDiskPressure, v1.TaintNodeDiskPressure, reasonDiskPressure, true},
		{v1.NodePIDPressure, v1.TaintNodePIDPressure, reasonPIDPressure, true},
	}
	for _, p := range pressure {
		if p.refuse && condition(node, p.cond) == v1.ConditionTrue && !tolerates(pod, v1.Taint{Key: p.taint, Effect: v1.TaintEffectNoSchedule}) {
			return []string{p.reason}
		}
	}
	return insufficient(demand, c)
}

// insufficient lists the resources the node lacks for the pod: a requested resource
// fits when allocatable minus what is placed covers it (a node without the resource
// has none), and one more pod must fit the node's pods allocatable.
func insufficient(demand podDemand, c candidate) []string {
	alloc := fromList(c.node.Status.Allocatable)
	var out []string
	if int64(c.usage.pods+1) > alloc[v1.ResourcePods] {
		out = append(out, reasonTooManyPods)
	}
	names := make([]v1.ResourceName, 0, len(demand.requests))
	for name, v := range demand.requests {
		if v > 0 && name != v1.ResourcePods {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if alloc[name]-c.usage.requests[name] < demand.requests[name] {
			out = append(out, reasonInsufficient(name))
		}
	}
	return out
}

func condition(node *v1.Node, t v1.NodeConditionType) v1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

func tolerates(pod *v1.Pod, taint v1.Taint) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), &taint, false) {
			return true
		}
	}
	return false
}

// matchesNodeSelector is spec.nodeSelector and the required node affinity together.
func matchesNodeSelector(pod *v1.Pod, node *v1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	// Terms are ORed; an empty list matches nothing.
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

// termMatches ANDs a term's label expressions and field expressions; a term with
// neither matches nothing, and an expression that is not valid matches nothing.
func termMatches(term v1.NodeSelectorTerm, node *v1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, e := range term.MatchExpressions {
		if !requirementMatches(e, labels.Set(node.Labels)) {
			return false
		}
	}
	for _, e := range term.MatchFields {
		if e.Key != "metadata.name" || (e.Operator != v1.NodeSelectorOpIn && e.Operator != v1.NodeSelectorOpNotIn) {
			return false
		}
		if !requirementMatches(e, labels.Set{"metadata.name": node.Name}) {
			return false
		}
	}
	return true
}

var selectorOps = map[v1.NodeSelectorOperator]selection.Operator{
	v1.NodeSelectorOpIn: selection.In, v1.NodeSelectorOpNotIn: selection.NotIn,
	v1.NodeSelectorOpExists: selection.Exists, v1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	v1.NodeSelectorOpGt: selection.GreaterThan, v1.NodeSelectorOpLt: selection.LessThan,
}

func requirementMatches(e v1.NodeSelectorRequirement, set labels.Set) bool {
	op, ok := selectorOps[e.Operator]
	if !ok {
		return false
	}
	r, err := labels.NewRequirement(e.Key, op, e.Values)
	if err != nil {
		return false
	}
	return r.Matches(set)
}
