package registry

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/plinth/plinth/control/apiserver"
)

// nodeUnreachablePodReason is the status reason the node lifecycle controller sets on
// pods of a node it lost; kubectl prints such a terminating pod as Unknown.
const nodeUnreachablePodReason = "NodeLost"

var podColumns = []metav1.TableColumnDefinition{
	{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
	{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
	{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
	apiserver.AgeColumn,
	{Name: "IP", Type: "string", Priority: 1, Description: "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."},
	{Name: "Node", Type: "string", Priority: 1, Description: "NodeName is a request to schedule this pod onto a specific node."},
	{Name: "Nominated Node", Type: "string", Priority: 1, Description: "nominatedNodeName is set when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods."},
	{Name: "Readiness Gates", Type: "string", Priority: 1, Description: "If specified, all readiness gates will be evaluated for pod readiness."},
}

// podSummary is what kubectl get pods shows of a pod's containers.
type podSummary struct {
	ready, total int
	reason       string
	restarts     int
	lastRestart  time.Time
}

func (s *podSummary) noteRestarts(st corev1.ContainerStatus) {
	s.restarts += int(st.RestartCount)
	if t := st.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(s.lastRestart) {
		s.lastRestart = t.FinishedAt.Time
	}
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// summarizePod follows kubectl's rules: the phase or status reason, then the first init
// container still in the way (Init:N/M, Init:<reason>), then the last main container
// that is waiting or terminated; restartable init containers (sidecars) count as
// containers once started; Terminating when marked for deletion.
func summarizePod(p *corev1.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers), reason: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.reason = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.reason = corev1.PodReasonSchedulingGated
		}
	}
	specs := map[string]*corev1.Container{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		specs[c.Name] = c
		if isSidecar(c) {
			s.total++
		}
	}
	initializing := false
	sidecarRestarts := 0
	for i, st := range p.Status.InitContainerStatuses {
		s.noteRestarts(st)
		sidecar := isSidecar(specs[st.Name])
		started := st.Started != nil && *st.Started
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
		}
		if t := st.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecar && started {
			if st.Ready {
				s.ready++
			}
			continue
		}
		initializing = true
		switch t, w := st.State.Terminated, st.State.Waiting; {
		case t != nil && t.Reason != "":
			s.reason = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			s.reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			s.reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			s.reason = "Init:" + w.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		break
	}
	if !initializing || podConditionTrue(p, corev1.PodInitialized) {
		s.restarts = sidecarRestarts
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := p.Status.ContainerStatuses[i]
			s.noteRestarts(st)
			switch t, w := st.State.Terminated, st.State.Waiting; {
			case w != nil && w.Reason != "":
				s.reason = w.Reason
			case t != nil && t.Reason != "":
				s.reason = t.Reason
			case t != nil && t.Signal != 0:
				s.reason = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				s.reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case st.Ready && st.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// A completed container beside a running one: the pod is still running.
		if s.reason == "Completed" && running {
			s.reason = "NotReady"
			if podConditionTrue(p, corev1.PodReady) {
				s.reason = "Running"
			}
		}
	}
	switch {
	case p.DeletionTimestamp != nil && p.Status.Reason == nodeUnreachablePodReason:
		s.reason = "Unknown"
	case p.DeletionTimestamp != nil && !podTerminal(p):
		s.reason = "Terminating"
	}
	return s
}

func podConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podRow(p *corev1.Pod, now time.Time) []any {
	s := summarizePod(p)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts > 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, duration.HumanDuration(now.Sub(s.lastRestart)))
	}
	ip := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(p.Spec.ReadinessGates); n > 0 {
		passed := 0
		for _, g := range p.Spec.ReadinessGates {
			if podConditionTrue(p, g.ConditionType) {
				passed++
			}
		}
		gates = fmt.Sprintf("%d/%d", passed, n)
	}
	return []any{
		fmt.Sprintf("%d/%d", s.ready, s.total), s.reason, restarts, apiserver.Age(p.CreationTimestamp, now),
		orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), gates,
	}
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "<none>"
	}
	return s
}
