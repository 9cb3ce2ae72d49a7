package pressuresignals

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/bpf/oomwatch"
	"github.com/plinth/plinth/daemon/pressure"
)

// Kubelet's reason and component for OOM kill Events on the Node.
const (
	ReasonSystemOOM = "SystemOOM"
	EventComponent  = "plinthd"
)

const (
	// oomQueue bounds the kills waiting for their Event: an OOM storm must not grow
	// memory on a node that is short of it; kills beyond it are counted and dropped.
	oomQueue = 32
	// eventTimeout bounds one Event post.
	eventTimeout = 5 * time.Second
)

// EventSink posts Kubernetes Events; APIEvents posts them through the API.
type EventSink interface {
	Create(ctx context.Context, ev *corev1.Event) error
}

func (s *Signals) runOOM(ctx context.Context) {
	kills := s.deps.OOM.OOMEvents(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case k, ok := <-kills:
			if !ok {
				s.fail(ctx, FeedOOM, errors.New("OOM kill events stopped"))
				return
			}
			s.metrics.oomKills.Inc()
			s.wake(pressure.TriggerOOMKill)
			s.logger.Warn("the kernel OOM killer killed a process", "pid", k.PID, "comm", k.Comm,
				"cgroup_id", k.CgroupID, "memcg_id", k.MemcgID)
			select {
			case s.oomq <- k:
			default:
				s.metrics.oomEventsLost.Inc()
			}
		}
	}
}

// postOOMEvents names each victim's cgroup and posts its Event, one at a time, off the
// path that wakes the manager.
func (s *Signals) postOOMEvents(ctx context.Context) {
	notServed := false
	for {
		var k oomwatch.OOMKill
		select {
		case <-ctx.Done():
			return
		case k = <-s.oomq:
		}
		where := s.victimCgroup(k)
		if s.opts.Events == nil || s.opts.NodeName == "" {
			continue
		}
		ev := OOMEvent(s.opts.NodeName, k, where, s.clock.Now())
		pctx, cancel := context.WithTimeout(ctx, eventTimeout)
		err := s.opts.Events.Create(pctx, ev)
		cancel()
		switch {
		case err == nil:
			notServed = false
		case apierrors.IsNotFound(err):
			if !notServed {
				s.logger.Info("the control service serves no events; OOM kills are logged and counted only", "err", err)
				notServed = true
			}
		case ctx.Err() == nil:
			s.logger.Warn("posting the OOM kill event failed", "pid", k.PID, "err", err)
		}
	}
}

// victimCgroup names the victim's cgroup: its memory cgroup (where the limit was) when
// known, else its v2 cgroup; "" when neither can be found any more.
func (s *Signals) victimCgroup(k oomwatch.OOMKill) string {
	h := s.deps.Host.Cgroups
	if h == nil {
		return ""
	}
	if k.MemcgID != 0 {
		if base, err := h.ControllerDir("memory"); err == nil {
			if p, ok := cgroupPathByID(base, k.MemcgID); ok {
				return p
			}
		}
	}
	if k.CgroupID != 0 {
		if u := h.UnifiedDir(); u != "" {
			if p, ok := cgroupPathByID(u, k.CgroupID); ok {
				return p
			}
		}
	}
	return ""
}

// OOMEvent is the Event kubelet would post on the Node for an OOM kill, naming the
// victim's pid and command, plus its cgroup when known.
func OOMEvent(node string, k oomwatch.OOMKill, cgroupPath string, now time.Time) *corev1.Event {
	msg := "System OOM encountered"
	if k.PID != 0 {
		comm := k.Comm
		if comm == "" {
			comm = "unknown"
		}
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, comm, k.PID)
	}
	if cgroupPath != "" {
		msg += ", cgroup: " + cgroupPath
	}
	return newEvent(nodeReference(node), corev1.EventTypeWarning, ReasonSystemOOM, msg, node, now)
}

// nodeReference is how kubelet refers to its Node in events: the name doubles as UID.
func nodeReference(node string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: types.UID(node)}
}

func newEvent(ref corev1.ObjectReference, eventType, reason, message, node string, now time.Time) *corev1.Event {
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	t := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// client-go's recorder names events this way: unique per object and time.
			Name:      fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()),
			Namespace: ns,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		Source:              corev1.EventSource{Component: EventComponent, Host: node},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		ReportingController: EventComponent,
		ReportingInstance:   node,
	}
}
