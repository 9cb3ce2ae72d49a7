package nodeclient

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is an API object with metadata: *corev1.Node, *coordinationv1.Lease...
type object interface {
	runtime.Object
	metav1.Object
}

// resource makes the requests for one API resource and decodes the answers into T
// (an object) or L (its list). The requests are the ones client-go's generated clients
// make, so a server sees no difference.
type resource[T object, L runtime.Object] struct {
	client    rest.Interface // for the resource's group and version
	params    runtime.ParameterCodec
	name      string // the plural resource name, as in the URL: "nodes"
	namespace string // "" for a cluster-scoped resource or every namespace (left out of the URL)
	newObject func() T
	newList   func() L
}

func (r resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.client.Get().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		Name(name).
		VersionedParams(&opts, r.params).
		Do(ctx).
		Into(out)
	return out, err
}

func (r resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.client.Get().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		VersionedParams(&opts, r.params).
		Timeout(timeoutOf(opts)).
		Do(ctx).
		Into(out)
	return out, err
}

func (r resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.client.Get().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		VersionedParams(&opts, r.params).
		Timeout(timeoutOf(opts)).
		Watch(ctx)
}

func (r resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObject()
	err := r.client.Post().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		VersionedParams(&opts, r.params).
		Body(obj).
		Do(ctx).
		Into(out)
	return out, err
}

// Delete sends opts as the request body, as client-go's typed clients do, so
// preconditions and grace periods reach the server.
func (r resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.client.Delete().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		Name(name).
		Body(&opts).
		Do(ctx).
		Error()
}

func (r resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, obj, "", opts)
}

func (r resource[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, obj, "status", opts)
}

func (r resource[T, L]) put(ctx context.Context, obj T, subresource string, opts metav1.UpdateOptions) (T, error) {
	out := r.newObject()
	req := r.client.Put().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		Name(obj.GetName())
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	err := req.VersionedParams(&opts, r.params).
		Body(obj).
		Do(ctx).
		Into(out)
	return out, err
}

func (r resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := r.newObject()
	err := r.client.Patch(pt).
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).
		Name(name).
		SubResource(subresources...).
		VersionedParams(&opts, r.params).
		Body(data).
		Do(ctx).
		Into(out)
	return out, err
}

// timeoutOf is the request timeout a list or watch asks for with timeoutSeconds, as
// client-go's clients set it, so the HTTP request ends when the server should have.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
