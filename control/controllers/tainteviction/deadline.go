package tainteviction

import (
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
)

// noExecuteTaints returns the node's NoExecute taints.
func noExecuteTaints(node *v1.Node) []v1.Taint {
	var out []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// tolerance is how long a pod tolerates one taint.
type tolerance struct {
	tolerated bool
	forever   bool
	seconds   int64
}

// toleranceOf is the most a pod's tolerations allow for one taint: any toleration
// without tolerationSeconds makes it forever, else the longest tolerationSeconds of the
// matching ones (a negative value counts as 0, as in Kubernetes).
func toleranceOf(tolerations []v1.Toleration, taint *v1.Taint) tolerance {
	var best tolerance
	for i := range tolerations {
		tol := &tolerations[i]
		// Only Equal and Exists are served by the API, so the comparison operators
		// stay off and the logger (used only by them) discards.
		if !tol.ToleratesTaint(logr.Discard(), taint, false) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return tolerance{tolerated: true, forever: true}
		}
		s := max(*tol.TolerationSeconds, 0)
		if !best.tolerated || s > best.seconds {
			best = tolerance{tolerated: true, seconds: s}
		}
	}
	return best
}

// verdict is when a pod must be deleted from its node.
type verdict struct {
	// evict is false when the pod may stay for good.
	evict bool
	// at is the deadline; the zero time for a taint the pod does not tolerate at all.
	at time.Time
	// taint is the taint whose toleration runs out first, for logs and events.
	taint v1.Taint
}

// evictionDeadline decides when a pod with these tolerations must leave a node with
// these NoExecute taints. since gives the moment a taint was added: its timeAdded, or
// when it was first seen for a taint without one.
func evictionDeadline(tolerations []v1.Toleration, taints []v1.Taint, since func(v1.Taint) time.Time) verdict {
	var v verdict
	for i := range taints {
		taint := &taints[i]
		tol := toleranceOf(tolerations, taint)
		if tol.forever {
			continue
		}
		var at time.Time // not tolerated: at once
		if tol.tolerated {
			at = since(*taint).Add(time.Duration(tol.seconds) * time.Second)
		}
		if !v.evict || at.Before(v.at) {
			v = verdict{evict: true, at: at, taint: *taint}
		}
	}
	return v
}
