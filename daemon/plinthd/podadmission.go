package plinthd

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/admission"
)

// podGate admits the pods bound to the node before the runtime starts them, as
// kubelet's admit handlers do: a pod is checked once, when first seen; an admitted pod
// runs until it is deleted, a refused one is failed in the API with the refusal's
// reason and never started.
type podGate struct {
	admitter *admission.Admitter
	// node returns this node as last seen (nil when it cannot be read: every pod is
	// then refused, as admission says).
	node func(ctx context.Context) *corev1.Node
	// fail writes a refused pod's status.
	fail func(pod *corev1.Pod, st corev1.PodStatus)
	now  func() time.Time
	// shuttingDown reports a graceful node shutdown under way (nil: never), during
	// which no pod is admitted.
	shuttingDown func() bool

	admitted map[types.UID]*corev1.Pod
	refused  map[types.UID]bool
}

func newPodGate(node func(ctx context.Context) *corev1.Node, fail func(*corev1.Pod, corev1.PodStatus), now func() time.Time) *podGate {
	return &podGate{admitter: admission.New(), node: node, fail: fail, now: now,
		admitted: map[types.UID]*corev1.Pod{}, refused: map[types.UID]bool{}}
}

// filter returns the pods the runtime may see: those admitted, plus those being
// deleted (whose containers, if any, must go). first marks plinthd's first list:
// pods already running then were admitted by an earlier plinthd and are not
// checked again.
func (g *podGate) filter(ctx context.Context, pods []*corev1.Pod, first bool) []*corev1.Pod {
	listed := map[types.UID]bool{}
	var candidates []*corev1.Pod
	for _, p := range pods {
		listed[p.UID] = true
		_, ok := g.admitted[p.UID]
		switch {
		case ok:
			g.admitted[p.UID] = p
		case g.refused[p.UID] || p.DeletionTimestamp != nil || terminalPod(p):
		case first && p.Status.Phase == corev1.PodRunning:
			g.admitted[p.UID] = p
		default:
			candidates = append(candidates, p)
		}
	}
	for uid := range g.admitted {
		if !listed[uid] {
			delete(g.admitted, uid)
		}
	}
	for uid := range g.refused {
		if !listed[uid] {
			delete(g.refused, uid)
		}
	}
	if len(candidates) > 0 {
		node := g.node(ctx)
		base := admission.Input{Node: node, Pressure: admission.PressureFromNode(node),
			ShuttingDown: g.shuttingDown != nil && g.shuttingDown()}
		var active []*corev1.Pod
		for _, p := range g.admitted {
			if !terminalPod(p) {
				active = append(active, p)
			}
		}
		accepted, refused := g.admitter.AdmitInOrder(base, active, candidates)
		for _, p := range accepted {
			g.admitted[p.UID] = p
		}
		for _, r := range refused {
			g.refused[r.Pod.UID] = true
			g.fail(r.Pod, refusedStatus(r, g.now()))
		}
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if _, ok := g.admitted[p.UID]; ok || p.DeletionTimestamp != nil {
			out = append(out, p)
		}
	}
	return out
}

func terminalPod(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// refusedStatus is a refused pod's status: Failed with the refusal's reason and
// message, as kubelet's rejectPod writes it.
func refusedStatus(r admission.Refusal, now time.Time) corev1.PodStatus {
	st := *r.Pod.Status.DeepCopy()
	st.Phase = corev1.PodFailed
	st.Reason, st.Message = r.Result.Reason, r.Result.Message
	if st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}
	return st
}
