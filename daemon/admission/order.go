package admission

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Refusal is a pod admission turned away, with why.
type Refusal struct {
	Pod    *corev1.Pod
	Result Result
}

// AdmitInOrder admits new pods the way kubelet handles a batch of pod additions:
// oldest first (by creationTimestamp, ties by namespace and name), each checked against
// the pods already admitted plus the new ones admitted before it, so two new pods
// cannot both take the last room on the node. base supplies Node, Pressure,
// ShuttingDown and OS; its Pod and OtherPods are ignored. Neither slice is changed.
func (a *Admitter) AdmitInOrder(base Input, admitted, candidates []*corev1.Pod) (accepted []*corev1.Pod, refused []Refusal) {
	order := slices.Clone(candidates)
	slices.SortStableFunc(order, func(x, y *corev1.Pod) int {
		return cmp.Or(x.CreationTimestamp.Time.Compare(y.CreationTimestamp.Time),
			cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	others := slices.Clone(admitted)
	for _, p := range order {
		in := base
		in.Pod, in.OtherPods = p, others
		if r := a.Admit(in); !r.Admit {
			refused = append(refused, Refusal{Pod: p, Result: r})
			continue
		}
		accepted = append(accepted, p)
		others = append(others, p)
	}
	return accepted, refused
}
