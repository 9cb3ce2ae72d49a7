package nodeclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ServicesListerWatcher lists and watches the Services of every namespace matching
// labelSelector ("" for all; kube-proxy passes "!service.kubernetes.io/service-proxy-name"),
// for the Service proxy's informer.
func ServicesListerWatcher(c Interface, labelSelector string) cache.ListerWatcher {
	return newListerWatcher(c, c.Services(metav1.NamespaceAll), selectors{label: labelSelector})
}

// EndpointSlicesListerWatcher lists and watches the EndpointSlices of every namespace
// matching labelSelector ("" for all; kube-proxy passes
// "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name"), for
// the Service proxy's informer.
func EndpointSlicesListerWatcher(c Interface, labelSelector string) cache.ListerWatcher {
	return newListerWatcher(c, c.EndpointSlices(metav1.NamespaceAll), selectors{label: labelSelector})
}

// NodeListerWatcher lists and watches one Node (the field selector
// metadata.name=<name>), for the Service proxy's informer on its own Node.
func NodeListerWatcher(c Interface, name string) cache.ListerWatcher {
	return newListerWatcher(c, c.Nodes(), selectors{field: fields.OneTermEqualSelector("metadata.name", name).String()})
}

// NodePodsListerWatcher lists and watches the pods of every namespace bound to node
// (the field selector spec.nodeName=<node>, as kubelet watches its pods), for the pod
// runtime's informer.
func NodePodsListerWatcher(c Interface, node string) cache.ListerWatcher {
	return newListerWatcher(c, c.Pods(metav1.NamespaceAll), selectors{field: fields.OneTermEqualSelector("spec.nodeName", node).String()})
}

// listWatchable is a resource client that lists into L and watches.
type listWatchable[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// selectors restrict what a ListerWatcher sees; empty ones select everything.
type selectors struct {
	label, field string
}

func (s selectors) apply(opts *metav1.ListOptions) {
	if s.label != "" {
		opts.LabelSelector = s.label
	}
	if s.field != "" {
		opts.FieldSelector = s.field
	}
}

// newListerWatcher lists and watches r with sel. It tells the reflector whether c
// streams a watch list (watch-list semantics, client-go's default since 1.35) the way a
// server does: a fake clientset behind nodeclienttest does not, and an informer on it
// would wait for the initial-events bookmark for ever.
func newListerWatcher[L runtime.Object](c Interface, r listWatchable[L], sel selectors) cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			sel.apply(&opts)
			return r.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			sel.apply(&opts)
			return r.Watch(ctx, opts)
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, c)
}
