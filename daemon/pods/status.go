package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/internal/podqos"
)

// ContainerIDPrefix is the runtime part of containerID in container statuses
// ("<runtime>://<id>", as "containerd://…" with kubelet).
const ContainerIDPrefix = "plinth://"

// ComputeStatus returns the pod's status from what the node knows: phase, conditions,
// init and app container statuses, pod and host IPs, QoS class and start time. prev
// is the status last posted, whose condition transition times are kept while a
// condition does not change.
func ComputeStatus(pod *corev1.Pod, st *PodState, prev *corev1.PodStatus, now time.Time) corev1.PodStatus {
	var s corev1.PodStatus
	s.QOSClass = podqos.Class(pod)
	if len(st.PodIPs) > 0 {
		s.PodIP = st.PodIPs[0]
		for _, ip := range st.PodIPs {
			s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
		}
	}
	if len(st.HostIPs) > 0 {
		s.HostIP = st.HostIPs[0]
		for _, ip := range st.HostIPs {
			s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip})
		}
	}
	if !st.StartTime.IsZero() {
		t := metav1.NewTime(st.StartTime)
		s.StartTime = &t
	}

	policy := pod.Spec.RestartPolicy
	if st.Terminating {
		policy = corev1.RestartPolicyNever // nothing restarts any more
	}
	initDone, initFailed := true, false
	var initPending []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := st.Container(c.Name)
		status := containerStatus(pod, c, cs, now, initDone, policy, true)
		status.Ready = cs.Current != nil && cs.Current.State == Exited && cs.Current.ExitCode == 0 && !cs.Current.Unknown
		s.InitContainerStatuses = append(s.InitContainerStatuses, status)
		if !status.Ready {
			if initDone {
				initFailed = cs.Current != nil && cs.Current.State == Exited && policy == corev1.RestartPolicyNever
			}
			initDone = false
			initPending = append(initPending, c.Name)
		}
	}
	var unready []string
	running, waiting, stopped, succeeded := 0, 0, 0, 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := st.Container(c.Name)
		status := containerStatus(pod, c, cs, now, initDone, policy, false)
		s.ContainerStatuses = append(s.ContainerStatuses, status)
		if !status.Ready {
			unready = append(unready, c.Name)
		}
		switch {
		case cs.Current != nil && cs.Current.State == Running:
			running++
		case cs.Current != nil && cs.Current.State == Exited:
			stopped++
			if cs.Current.ExitCode == 0 && !cs.Current.Unknown {
				succeeded++
			}
		default:
			waiting++
		}
	}

	switch {
	case initFailed:
		s.Phase = corev1.PodFailed
	case !initDone:
		s.Phase = corev1.PodPending
	case waiting > 0:
		s.Phase = corev1.PodPending
	case running > 0:
		s.Phase = corev1.PodRunning
	case stopped > 0:
		switch policy {
		case corev1.RestartPolicyNever:
			s.Phase = corev1.PodSucceeded
			if succeeded < stopped {
				s.Phase = corev1.PodFailed
			}
		case corev1.RestartPolicyOnFailure:
			s.Phase = corev1.PodRunning
			if succeeded == stopped {
				s.Phase = corev1.PodSucceeded
			}
		default:
			s.Phase = corev1.PodRunning // crash looping: it will run again
		}
	default:
		s.Phase = corev1.PodPending
	}

	s.Conditions = []corev1.PodCondition{
		condition(prev, corev1.PodScheduled, true, "", "", now),
		condition(prev, corev1.PodInitialized, initDone, "ContainersNotInitialized", listMessage("containers with incomplete status", initPending), now),
	}
	ready := initDone && len(unready) == 0
	terminal := s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
	reason := "ContainersNotReady"
	if terminal {
		reason = "PodCompleted"
		ready = false
	}
	msg := listMessage("containers with unready status", unready)
	if terminal {
		msg = ""
	}
	s.Conditions = append(s.Conditions, condition(prev, corev1.ContainersReady, ready, reason, msg, now))
	podReady, gateMsg := ready, ""
	for _, g := range pod.Spec.ReadinessGates {
		if !gateTrue(prev, g.ConditionType) {
			podReady = false
			gateMsg = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", g.ConditionType)
			reason = "ReadinessGatesNotReady"
		}
	}
	if gateMsg != "" && ready {
		msg = gateMsg
	}
	s.Conditions = append(s.Conditions, condition(prev, corev1.PodReady, podReady, reason, msg, now))
	return s
}

func listMessage(prefix string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return prefix + ": [" + strings.Join(names, " ") + "]"
}

func gateTrue(prev *corev1.PodStatus, t corev1.PodConditionType) bool {
	if prev == nil {
		return false
	}
	for _, c := range prev.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// condition builds a condition, keeping the previous transition time while its status
// is unchanged.
func condition(prev *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason, msg string, now time.Time) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)}
	if ok {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
	}
	if prev != nil {
		for _, p := range prev.Conditions {
			if p.Type == t && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return c
}

// containerStatus is one container's status; initDone tells an app container still
// waiting for init containers (PodInitializing) from one being created.
func containerStatus(pod *corev1.Pod, c *corev1.Container, cs *ContainerState, now time.Time, initDone bool, policy corev1.RestartPolicy, init bool) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: int32(cs.Restarts)}
	started := false
	if r := cs.Current; r != nil {
		if r.ID != "" {
			s.ContainerID = ContainerIDPrefix + r.ID
		}
		s.ImageID = r.ImageID
		switch r.State {
		case Running:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(r.StartedAt)}
			started = c.StartupProbe == nil || cs.Started
			s.Ready = started && (c.ReadinessProbe == nil || cs.Ready)
		case Exited:
			s.State.Terminated = terminated(r)
		default:
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		restarts := shouldRestart(policy, r)
		if init {
			restarts = shouldRestartInit(policy, r)
		}
		if r.State == Exited && restarts {
			// Waiting for its restart: the run that ended becomes lastState.
			s.LastTerminationState.Terminated = s.State.Terminated
			s.State = corev1.ContainerState{Waiting: waitingForRestart(pod, c, cs, now)}
		} else if cs.Previous != nil && cs.Previous.State == Exited {
			s.LastTerminationState.Terminated = terminated(cs.Previous)
		}
	} else {
		w := &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		if !initDone {
			w.Reason = "PodInitializing"
		}
		if cs.Waiting != nil {
			w = waitingFor(cs, now)
		}
		s.State.Waiting = w
	}
	s.Started = &started
	return s
}

func terminated(r *Run) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{ExitCode: int32(r.ExitCode), Signal: int32(r.Signal), Message: r.Message,
		StartedAt: metav1.NewTime(r.StartedAt), FinishedAt: metav1.NewTime(r.FinishedAt)}
	if r.ID != "" {
		t.ContainerID = ContainerIDPrefix + r.ID
	}
	switch {
	case r.Unknown:
		t.Reason = "ContainerStatusUnknown"
	case r.OOMKilled:
		t.Reason = "OOMKilled"
	case r.ExitCode == 0:
		t.Reason = "Completed"
	default:
		t.Reason = "Error"
	}
	return t
}

func waitingFor(cs *ContainerState, now time.Time) *corev1.ContainerStateWaiting {
	w := &corev1.ContainerStateWaiting{Reason: cs.Waiting.Reason, Message: cs.Waiting.Message}
	if w.Reason == "ErrImagePull" && !cs.Backoff.Ready(now) {
		w.Reason = "ImagePullBackOff"
		w.Message = fmt.Sprintf("Back-off pulling image: %s", cs.Waiting.Message)
	}
	return w
}

func waitingForRestart(pod *corev1.Pod, c *corev1.Container, cs *ContainerState, now time.Time) *corev1.ContainerStateWaiting {
	if cs.Waiting != nil {
		return waitingFor(cs, now)
	}
	if !cs.Backoff.Ready(now) {
		return &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", cs.Backoff.Delay, c.Name, pod.Name, pod.Namespace, pod.UID)}
	}
	return &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
}
