package nodelifecycle

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// noScheduleKeys are the NoSchedule taints this controller owns, in the order it adds
// them. A NoSchedule taint with one of these keys is the controller's whoever added it,
// so it is removed when its reason goes away; every other taint is left alone.
var noScheduleKeys = []string{
	v1.TaintNodeNotReady,
	v1.TaintNodeUnreachable,
	v1.TaintNodeMemoryPressure,
	v1.TaintNodeDiskPressure,
	v1.TaintNodePIDPressure,
	v1.TaintNodeNetworkUnavailable,
	v1.TaintNodeUnschedulable,
}

// wantedNoSchedule is the set of NoSchedule taint keys the node's conditions and spec
// call for.
func wantedNoSchedule(node *v1.Node) map[string]bool {
	want := make(map[string]bool, 2)
	for _, c := range node.Status.Conditions {
		switch {
		case c.Type == v1.NodeReady && c.Status == v1.ConditionFalse:
			want[v1.TaintNodeNotReady] = true
		case c.Type == v1.NodeReady && c.Status == v1.ConditionUnknown:
			want[v1.TaintNodeUnreachable] = true
		case c.Type == v1.NodeMemoryPressure && c.Status == v1.ConditionTrue:
			want[v1.TaintNodeMemoryPressure] = true
		case c.Type == v1.NodeDiskPressure && c.Status == v1.ConditionTrue:
			want[v1.TaintNodeDiskPressure] = true
		case c.Type == v1.NodePIDPressure && c.Status == v1.ConditionTrue:
			want[v1.TaintNodePIDPressure] = true
		case c.Type == v1.NodeNetworkUnavailable && c.Status == v1.ConditionTrue:
			want[v1.TaintNodeNetworkUnavailable] = true
		}
	}
	if node.Spec.Unschedulable {
		want[v1.TaintNodeUnschedulable] = true
	}
	return want
}

// noExecuteFor is the NoExecute taint key a Ready status calls for: not-ready for a node
// that says it is not Ready, unreachable for one that stopped saying anything, none
// otherwise (Ready, or no Ready condition yet).
func noExecuteFor(ready v1.ConditionStatus) string {
	switch ready {
	case v1.ConditionFalse:
		return v1.TaintNodeNotReady
	case v1.ConditionUnknown:
		return v1.TaintNodeUnreachable
	}
	return ""
}

func isNoExecuteKey(key string) bool {
	return key == v1.TaintNodeNotReady || key == v1.TaintNodeUnreachable
}

// noExecuteIntent is what should happen to a node's NoExecute taints.
type noExecuteIntent struct {
	// key is the NoExecute taint the node should carry, "" for none: the other one is
	// removed at once either way.
	key string
	// mayAdd allows adding key to a node that carries neither NoExecute taint. Adding
	// one starts evictions, so it waits for the zone's rate limiter; swapping one for
	// the other does not, because the node's pods are already being evicted.
	mayAdd bool
}

// taintPlan is the outcome of planTaints.
type taintPlan struct {
	taints  []v1.Taint
	changed bool
	// pending is true when the intent's key was not added only because mayAdd was
	// false: the node should wait in its zone's queue.
	pending bool
	// added and removed are the taints that changed, as key:effect, for logs.
	added, removed []string
}

// planTaints computes a node's new taint list: the NoSchedule taints in want, and the
// NoExecute taint of the intent. Taints the controller does not own are kept in place
// and unchanged; owned taints that stay keep their value and timeAdded, so a repeated
// call changes nothing. New NoExecute taints carry timeAdded = now, which the taint
// eviction controller counts tolerationSeconds from.
func planTaints(current []v1.Taint, want map[string]bool, intent noExecuteIntent, now metav1.Time) taintPlan {
	var p taintPlan
	swap := false
	haveNoSchedule := make(map[string]bool, len(want))
	haveNoExecute := false
	for _, t := range current {
		switch {
		case t.Effect == v1.TaintEffectNoSchedule && owned(t.Key):
			if !want[t.Key] || haveNoSchedule[t.Key] {
				p.removed = append(p.removed, t.ToString())
				continue
			}
			haveNoSchedule[t.Key] = true
		case t.Effect == v1.TaintEffectNoExecute && isNoExecuteKey(t.Key):
			if t.Key != intent.key || haveNoExecute {
				p.removed = append(p.removed, t.ToString())
				swap = swap || (t.Key != intent.key && intent.key != "")
				continue
			}
			haveNoExecute = true
		}
		p.taints = append(p.taints, t)
	}
	// Swapping: the other NoExecute taint was removed above, so this node's pods are
	// already being evicted and the new one goes on without waiting.
	if intent.key != "" && !haveNoExecute {
		if intent.mayAdd || swap {
			t := v1.Taint{Key: intent.key, Effect: v1.TaintEffectNoExecute, TimeAdded: &now}
			p.taints = append(p.taints, t)
			p.added = append(p.added, t.ToString())
		} else {
			p.pending = true
		}
	}
	for _, k := range noScheduleKeys {
		if want[k] && !haveNoSchedule[k] {
			t := v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule}
			p.taints = append(p.taints, t)
			p.added = append(p.added, t.ToString())
		}
	}
	p.changed = len(p.added) > 0 || len(p.removed) > 0
	if !p.changed {
		p.taints = current
	}
	return p
}

func owned(key string) bool {
	for _, k := range noScheduleKeys {
		if k == key {
			return true
		}
	}
	return false
}

// hasNoExecute reports whether the node carries the NoExecute taint key.
func hasNoExecute(node *v1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute && t.Key == key {
			return true
		}
	}
	return false
}
