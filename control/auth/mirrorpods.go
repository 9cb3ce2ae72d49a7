package auth

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth/plinth/internal/podrefs"
)

// mirrorPodAnnotation marks the API's copy of a static pod; its value is the static
// pod's config hash. kubelet and plinthd set it; validation keeps it immutable.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// admitMirrorPodCreate follows the reference's rules for the only pods a node may
// create, the mirror pods of its static pods: marked with the mirror annotation, bound
// to the node itself, referring to no other API object (a node must not gain access to
// a Secret or ConfigMap by naming it in a pod it made up), and owned, if at all, by
// the node's own Node object as a controller that does not block its deletion.
func (r *NodeRestriction) admitMirrorPodCreate(ctx context.Context, node string, obj runtime.Object) error {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expected a Pod, got %T", obj)
	}
	if _, ok := p.Annotations[mirrorPodAnnotation]; !ok {
		return fmt.Errorf("node %s may create only mirror pods (annotated %s); pod %s/%s is not one", node, mirrorPodAnnotation, p.Namespace, p.Name)
	}
	if p.Spec.NodeName != node {
		return fmt.Errorf("node %s may create only mirror pods bound to itself; pod %s/%s has spec.nodeName %q", node, p.Namespace, p.Name, p.Spec.NodeName)
	}
	if refs := podrefs.APIObjects(&p.Spec); len(refs) > 0 {
		var list []string
		for _, ref := range refs {
			list = append(list, ref.String())
		}
		return fmt.Errorf("node %s may not create mirror pods that refer to other API objects; pod %s/%s refers to %s",
			node, p.Namespace, p.Name, strings.Join(list, ", "))
	}
	return r.admitMirrorPodOwner(ctx, node, p)
}

func (r *NodeRestriction) admitMirrorPodOwner(ctx context.Context, node string, p *corev1.Pod) error {
	switch len(p.OwnerReferences) {
	case 0:
		return nil
	case 1:
	default:
		return fmt.Errorf("node %s may create mirror pods with at most one owner reference, to its own Node; pod %s/%s has %d",
			node, p.Namespace, p.Name, len(p.OwnerReferences))
	}
	owner := p.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node {
		return fmt.Errorf("node %s may create mirror pods owned only by its own Node (apiVersion v1, kind Node, name %s), not by %s %s %q",
			node, node, owner.APIVersion, owner.Kind, owner.Name)
	}
	if owner.Controller == nil || !*owner.Controller {
		return fmt.Errorf("node %s: the owner reference of mirror pod %s/%s must set controller: true", node, p.Namespace, p.Name)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return fmt.Errorf("node %s: the owner reference of mirror pod %s/%s may not set blockOwnerDeletion", node, p.Namespace, p.Name)
	}
	if r.Nodes == nil {
		return fmt.Errorf("node %s may not create mirror pods owned by its Node here: the control service cannot look Nodes up", node)
	}
	n, err := r.Nodes.GetNode(ctx, node)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("node %s may not create mirror pods owned by its Node: Node %s does not exist", node, node)
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("look up Node %s for a mirror pod's owner: %w", node, err))
	}
	if n.UID != owner.UID {
		return fmt.Errorf("node %s: the owner reference of mirror pod %s/%s names UID %q, but Node %s has UID %q",
			node, p.Namespace, p.Name, owner.UID, node, n.UID)
	}
	return nil
}
