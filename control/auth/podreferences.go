package auth

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/plinth/plinth/control/apiserver"
)

// NodePods finds the pods bound to a node in one namespace. The node authorizer reads
// them at each request to decide which Secrets and ConfigMaps the node may read, so
// answers must be current: a pod bound a moment ago is there, a deleted one is gone.
type NodePods interface {
	PodsOnNode(ctx context.Context, namespace, node string) ([]*corev1.Pod, error)
}

// ObjectsNodePods reads pods through the API server's stored objects (a linearizable
// etcd read of the namespace's pods, filtered by spec.nodeName).
func ObjectsNodePods(pods apiserver.Objects) NodePods { return objectsPodGetter{pods} }

func (g objectsPodGetter) PodsOnNode(ctx context.Context, namespace, node string) ([]*corev1.Pod, error) {
	objs, err := g.objs.List(ctx, namespace, fields.OneTermEqualSelector("spec.nodeName", node))
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("stored pod in %s is a %T", namespace, obj)
		}
		out = append(out, pod)
	}
	return out, nil
}

// referenceKind is what a pod can reference by name in its own namespace.
type referenceKind int

const (
	secretReference referenceKind = iota
	configMapReference
)

func (k referenceKind) String() string {
	if k == secretReference {
		return "secret"
	}
	return "configmap"
}

// podReferences reports whether pod uses the named Secret or ConfigMap: image pull
// secrets; secret, configMap and projected volumes and CSI node publish secrets; and
// in every container (init, ephemeral, regular) env valueFrom and envFrom.
func podReferences(pod *corev1.Pod, kind referenceKind, name string) bool {
	found := false
	visitPodReferences(pod, func(k referenceKind, n string) {
		found = found || (k == kind && n == name)
	})
	return found
}

func visitPodReferences(pod *corev1.Pod, visit func(referenceKind, string)) {
	for _, s := range pod.Spec.ImagePullSecrets {
		visit(secretReference, s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			visit(secretReference, v.Secret.SecretName)
		case v.ConfigMap != nil:
			visit(configMapReference, v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					visit(secretReference, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					visit(configMapReference, src.ConfigMap.Name)
				}
			}
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			visit(secretReference, v.CSI.NodePublishSecretRef.Name)
		}
	}
	visitContainer := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				visit(secretReference, ref.Name)
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				visit(configMapReference, ref.Name)
			}
		}
		for _, e := range envFrom {
			if e.SecretRef != nil {
				visit(secretReference, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				visit(configMapReference, e.ConfigMapRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		visitContainer(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.Containers {
		visitContainer(c.Env, c.EnvFrom)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visitContainer(c.Env, c.EnvFrom)
	}
}

// authorizeReferenced lets a node get a Secret or ConfigMap that a pod bound to it
// references, and list or watch it alone (fieldSelector=metadata.name=NAME, which the
// API server turns into the request's name), as kubelet's per-object watches do. The
// pods come from Pods (a cache) and, when it finds none referencing the object, from
// LivePods, so a new binding counts at once and a deletion as soon as the cache sees
// it. An open watch was authorized when it started and runs until it ends (client-go's
// reflectors end theirs after 5 to 10 minutes).
func (z Authorizer) authorizeReferenced(ctx context.Context, node string, kind referenceKind, a apiserver.Attributes) (bool, string) {
	switch a.Verb {
	case "get", "list", "watch":
	default:
		return false, fmt.Sprintf("nodes may only read %ss, not %s them", kind, a.Verb)
	}
	if a.Name == "" || a.Namespace == "" {
		return false, fmt.Sprintf("node %s may only read single %ss in a namespace (a get, or a list or watch with fieldSelector=metadata.name=NAME) that its pods use", node, kind)
	}
	if z.Pods == nil && z.LivePods == nil {
		return false, fmt.Sprintf("node %s may not read %ss here: the control service cannot look up its pods", node, kind)
	}
	for _, source := range []NodePods{z.Pods, z.LivePods} {
		if source == nil {
			continue
		}
		pods, err := source.PodsOnNode(ctx, a.Namespace, node)
		if err != nil {
			return false, fmt.Sprintf("looking up the pods of node %s in %s to authorize reading %s %s: %v", node, a.Namespace, kind, a.Name, err)
		}
		for _, pod := range pods {
			if podReferences(pod, kind, a.Name) {
				return true, ""
			}
		}
	}
	return false, fmt.Sprintf("no pod bound to node %s references %s %s/%s", node, kind, a.Namespace, a.Name)
}
