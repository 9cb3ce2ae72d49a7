package registry

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
)

// successStatus is what Kubernetes answers a successful eviction or binding with.
func successStatus() *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}
}

// evictionAction is pods/eviction: a graceful delete of the pod with the eviction's
// delete options. PodDisruptionBudgets are not served, so no budget can refuse it.
func evictionAction() apiserver.Action {
	return apiserver.Action{
		New: func() runtime.Object { return &policyv1.Eviction{} },
		Handle: func(ctx context.Context, pods apiserver.Objects, namespace, name string, body runtime.Object) (runtime.Object, int, error) {
			ev := body.(*policyv1.Eviction)
			var opts metav1.DeleteOptions
			if ev.DeleteOptions != nil {
				opts = *ev.DeleteOptions
			}
			if _, err := pods.Delete(ctx, namespace, name, opts); err != nil {
				return nil, 0, err
			}
			return successStatus(), http.StatusCreated, nil
		},
	}
}

var bindingResource = schema.GroupResource{Resource: "pods/binding"}

// bindingAction is pods/binding: the scheduler's way to set spec.nodeName, once, with
// the PodScheduled condition.
func bindingAction(clk clock.PassiveClock) apiserver.Action {
	return apiserver.Action{
		New: func() runtime.Object { return &corev1.Binding{} },
		Handle: func(ctx context.Context, pods apiserver.Objects, namespace, name string, body runtime.Object) (runtime.Object, int, error) {
			b := body.(*corev1.Binding)
			var errs field.ErrorList
			if b.Target.Kind != "" && b.Target.Kind != "Node" {
				errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node"}))
			}
			if b.Target.Name == "" {
				errs = append(errs, field.Required(field.NewPath("target", "name"), "the node to bind the pod to"))
			}
			if len(errs) > 0 {
				return nil, 0, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, errs)
			}
			_, err := pods.Update(ctx, namespace, name, func(obj runtime.Object) (runtime.Object, error) {
				p := obj.(*corev1.Pod)
				switch {
				case b.UID != "" && b.UID != p.UID:
					return nil, apierrors.NewConflict(bindingResource, name, fmt.Errorf("the binding names pod UID %s, the pod has %s", b.UID, p.UID))
				case p.DeletionTimestamp != nil:
					return nil, apierrors.NewConflict(bindingResource, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
				case p.Spec.NodeName != "":
					return nil, apierrors.NewConflict(bindingResource, name, fmt.Errorf("pod %s is already assigned to node %q", name, p.Spec.NodeName))
				}
				p.Spec.NodeName = b.Target.Name
				for k, v := range b.Annotations {
					if p.Annotations == nil {
						p.Annotations = map[string]string{}
					}
					p.Annotations[k] = v
				}
				return p, nil
			})
			if err != nil {
				return nil, 0, err
			}
			// The condition is status, written through the status subresource.
			_, err = pods.UpdateStatus(ctx, namespace, name, func(obj runtime.Object) (runtime.Object, error) {
				p := obj.(*corev1.Pod)
				setPodCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, clk)
				return p, nil
			})
			if err != nil {
				return nil, 0, fmt.Errorf("pod %s/%s was bound to %s, but its PodScheduled condition was not written: %w", namespace, name, b.Target.Name, err)
			}
			return successStatus(), http.StatusCreated, nil
		},
	}
}

// setPodCondition sets or replaces a condition, moving its transition time only when
// its status changes.
func setPodCondition(p *corev1.Pod, c corev1.PodCondition, clk clock.PassiveClock) {
	now := metav1.NewTime(clk.Now().Truncate(1e9))
	for i := range p.Status.Conditions {
		cur := &p.Status.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status != c.Status {
			cur.LastTransitionTime = now
		}
		cur.Status, cur.Reason, cur.Message = c.Status, c.Reason, c.Message
		cur.LastProbeTime = metav1.Time{}
		return
	}
	c.LastTransitionTime = now
	p.Status.Conditions = append(p.Status.Conditions, c)
}
