package pods

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ActionKind is what the pod worker should do to one container.
type ActionKind int

const (
	// StartContainer creates and starts a new run of the container.
	StartContainer ActionKind = iota + 1
	// KillContainer stops the container's current run (with the pod's grace period);
	// the next Plan restarts it if the policy says so.
	KillContainer
)

func (k ActionKind) String() string {
	switch k {
	case StartContainer:
		return "start"
	case KillContainer:
		return "kill"
	}
	return "unknown"
}

// Action is one step for the pod worker.
type Action struct {
	Kind      ActionKind
	Container string
	Init      bool
	// Reason says why (for events and logs): "first start", "restart", "liveness probe
	// failed", "startup probe failed".
	Reason string
}

// Plan returns what to do next for pod given what the node knows, and when to call Plan
// again at the latest if nothing else changes (zero: no deadline). It never acts on a
// pod being deleted: Terminate owns those.
//
// Init containers run one at a time in order, each to success before the next; a
// failed one restarts (with backoff) unless restartPolicy is Never, which fails the
// pod. App containers start together once every init container succeeded, and
// restart by policy: Always after any exit, OnFailure after a non-zero one, never with
// Never; every restart waits out the container's backoff.
func Plan(pod *corev1.Pod, st *PodState, now time.Time) (actions []Action, wake time.Time) {
	if pod.DeletionTimestamp != nil || st.Terminating {
		return nil, time.Time{}
	}
	earliest := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	policy := pod.Spec.RestartPolicy
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := st.Container(c.Name)
		switch {
		case cs.Current == nil:
			if cs.Waiting != nil && !cs.Backoff.Ready(now) {
				earliest(cs.Backoff.Until)
				return nil, wake
			}
			return []Action{{Kind: StartContainer, Container: c.Name, Init: true, Reason: "first start"}}, wake
		case cs.Current.State != Exited:
			return nil, wake // running (or created): wait for it
		case !shouldRestartInit(policy, cs.Current):
			if cs.Current.ExitCode == 0 && !cs.Current.Unknown {
				continue
			}
			return nil, time.Time{} // failed under Never: the pod has failed
		case !cs.Backoff.Ready(now):
			earliest(cs.Backoff.Until)
			return nil, wake
		default:
			return []Action{{Kind: StartContainer, Container: c.Name, Init: true, Reason: "restart"}}, wake
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := st.Container(c.Name)
		switch {
		case cs.Current == nil:
			if cs.Waiting != nil && !cs.Backoff.Ready(now) {
				earliest(cs.Backoff.Until)
				continue
			}
			actions = append(actions, Action{Kind: StartContainer, Container: c.Name, Reason: "first start"})
		case cs.Current.State != Exited:
			if cs.LivenessFailed {
				actions = append(actions, Action{Kind: KillContainer, Container: c.Name, Reason: "liveness probe failed"})
			}
		case !shouldRestart(policy, cs.Current):
		case !cs.Backoff.Ready(now):
			earliest(cs.Backoff.Until)
		default:
			actions = append(actions, Action{Kind: StartContainer, Container: c.Name, Reason: "restart"})
		}
	}
	return actions, wake
}

// shouldRestartInit tells whether an init container's ended run is to be retried: a
// failure is, unless the policy is Never; a success never is.
func shouldRestartInit(policy corev1.RestartPolicy, r *Run) bool {
	return policy != corev1.RestartPolicyNever && (r.ExitCode != 0 || r.Unknown)
}

func shouldRestart(policy corev1.RestartPolicy, r *Run) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return r.ExitCode != 0 || r.Unknown
	}
	return true // Always, and the API's default
}
