package registry

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/internal/poddefaults"
	"github.com/plinth/plinth/internal/podqos"
)

// defaultNotReadyTolerationSeconds is how long a pod stays on a node that is not ready
// or unreachable (DefaultTolerationSeconds admission).
const defaultNotReadyTolerationSeconds = int64(300)

var podGroupKind = schema.GroupKind{Kind: "Pod"}

// Pods is core/v1 pods, namespaced, with the status, eviction and binding
// subresources. clk stamps the PodScheduled condition a binding adds.
func Pods(clk clock.PassiveClock) *apiserver.Resource {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "pods", Kind: "Pod", Namespaced: true,
		ShortNames: []string{"po"}, Categories: []string{"all"},
		HasStatus: true,
		New:       func() runtime.Object { return &corev1.Pod{} },
		Default:   func(obj runtime.Object) { defaultPod(obj.(*corev1.Pod)) },
		Validate:  func(obj runtime.Object) field.ErrorList { return validatePod(obj.(*corev1.Pod)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validatePodUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		},
		SelectableFields: func(obj runtime.Object) fields.Set { return podFields(obj.(*corev1.Pod)) },
		Columns:          podColumns,
		Row:              func(obj runtime.Object, now time.Time) []any { return podRow(obj.(*corev1.Pod), now) },
		Hooks: apiserver.Hooks{
			BeforeCreate: func(_ context.Context, obj runtime.Object) error {
				// A new pod's status is the server's: Pending, with its QoS class.
				p := obj.(*corev1.Pod)
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podqos.Compute(p)}
				return nil
			},
			BeforeUpdate: func(ctx context.Context, obj, old runtime.Object) error {
				p, o := obj.(*corev1.Pod), old.(*corev1.Pod)
				if o.Spec.NodeName != "" || p.Spec.NodeName == "" {
					return nil
				}
				// Binding a pod to a node goes through pods/binding only; writes the
				// server makes itself carry no request attributes.
				if a, ok := apiserver.RequestAttributes(ctx); ok && a.Subresource != "binding" {
					return apierrors.NewInvalid(podGroupKind, p.Name, field.ErrorList{
						field.Forbidden(field.NewPath("spec", "nodeName"), "a pod is bound to a node through the pods/binding subresource, not by an update"),
					})
				}
				return nil
			},
			GracePeriod: func(obj runtime.Object, requested *int64) int64 { return podGracePeriod(obj.(*corev1.Pod), requested) },
			Actions: map[string]apiserver.Action{
				"eviction": evictionAction(),
				"binding":  bindingAction(clk),
			},
		},
	}
}

// podGracePeriod is how long a DELETE leaves a pod to its node: the requested period,
// else the pod's terminationGracePeriodSeconds; nothing for a pod no node runs (not
// bound, or already finished); a negative request means one second.
func podGracePeriod(p *corev1.Pod, requested *int64) int64 {
	var grace int64
	switch {
	case requested != nil:
		grace = *requested
	case p.Spec.TerminationGracePeriodSeconds != nil:
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if p.Spec.NodeName == "" || podTerminal(p) {
		grace = 0
	}
	if grace < 0 {
		grace = 1
	}
	return grace
}

func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podFields are the fields a pod field selector can match, as kube-apiserver offers
// them (kubectl describe node uses spec.nodeName and status.phase).
func podFields(p *corev1.Pod) fields.Set {
	podIP := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// defaultPod fills Kubernetes' defaults. It runs on create and on every update, so
// each step only fills what is missing.
func defaultPod(p *corev1.Pod) {
	poddefaults.Apply(&p.Spec)
	addNotReadyTolerations(&p.Spec)
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
	p.Status.QOSClass = podqos.Compute(p)
}

// addNotReadyTolerations gives the pod five minutes on a node that is not ready or
// unreachable before the taint eviction controller removes it, unless the pod already
// tolerates those NoExecute taints itself (an empty key or effect matches all).
func addNotReadyTolerations(s *corev1.PodSpec) {
	tolerates := func(key string) bool {
		for _, t := range s.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return true
			}
		}
		return false
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if tolerates(key) {
			continue
		}
		secs := defaultNotReadyTolerationSeconds
		s.Tolerations = append(s.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
		})
	}
}
