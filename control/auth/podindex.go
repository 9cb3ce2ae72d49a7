package auth

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// byNodeAndNamespace indexes pods by "node/namespace".
const byNodeAndNamespace = "nodeNamespace"

// PodIndex keeps the bound pods of every node, reduced to what the node authorizer
// looks at, in an informer's cache: a node's Secret or ConfigMap read then costs a map
// lookup rather than an etcd read of the namespace's pods. It lags the API by the
// informer's watch (milliseconds normally), so the authorizer asks it first and asks
// the live pods (ObjectsNodePods) only when it finds no referencing pod: a pod bound a
// moment ago is seen at once, and a deleted pod's access lasts only until the watch
// delivers the deletion.
//
// Run owns the informer's goroutines and stops them when its context ends.
type PodIndex struct {
	informer cache.SharedIndexInformer
}

var _ NodePods = (*PodIndex)(nil)

// NewPodIndex builds the index over client; nothing runs before Run.
func NewPodIndex(client kubernetes.Interface) (*PodIndex, error) {
	// Only bound pods matter: unbound ones reference nothing a node may read.
	selector := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{
		byNodeAndNamespace: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("pod index: got a %T", obj)
			}
			return []string{pod.Spec.NodeName + "/" + pod.Namespace}, nil
		},
	})
	if err := informer.SetTransform(referencesOnly); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	return &PodIndex{informer: informer}, nil
}

// Run fills and follows the index until ctx is done.
func (x *PodIndex) Run(ctx context.Context) { x.informer.RunWithContext(ctx) }

// HasSynced reports whether the first list has been stored.
func (x *PodIndex) HasSynced() bool { return x.informer.HasSynced() }

// PodsOnNode implements NodePods from the cache. The pods carry only their name,
// namespace, node and the fields that reference Secrets and ConfigMaps; callers must
// not change them.
func (x *PodIndex) PodsOnNode(_ context.Context, namespace, node string) ([]*corev1.Pod, error) {
	objs, err := x.informer.GetIndexer().ByIndex(byNodeAndNamespace, node+"/"+namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out, nil
}

// referencesOnly reduces a pod to what the authorizer reads, so the cache holds a few
// hundred bytes per pod rather than the whole object with its status.
func referencesOnly(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // tombstones pass through
	}
	slim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Spec: corev1.PodSpec{
			NodeName:         pod.Spec.NodeName,
			ImagePullSecrets: pod.Spec.ImagePullSecrets,
			Volumes:          pod.Spec.Volumes,
		},
	}
	slimContainer := func(c corev1.Container) corev1.Container {
		return corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom}
	}
	for _, c := range pod.Spec.InitContainers {
		slim.Spec.InitContainers = append(slim.Spec.InitContainers, slimContainer(c))
	}
	for _, c := range pod.Spec.Containers {
		slim.Spec.Containers = append(slim.Spec.Containers, slimContainer(c))
	}
	for _, c := range pod.Spec.EphemeralContainers {
		e := corev1.EphemeralContainer{}
		e.Name, e.Env, e.EnvFrom = c.Name, c.Env, c.EnvFrom
		slim.Spec.EphemeralContainers = append(slim.Spec.EphemeralContainers, e)
	}
	return slim, nil
}
