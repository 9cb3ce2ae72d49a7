package nodeclient

import (
	"context"
	"fmt"
	"net/http"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is what plinthd asks of the API. The per-resource interfaces carry the
// method signatures of client-go's typed clients (a subset of their methods).
type Interface interface {
	Nodes() NodeClient
	Leases(namespace string) LeaseClient
	// Pods in namespace; metav1.NamespaceAll ("") lists and watches every namespace.
	Pods(namespace string) PodClient
	Evictions(namespace string) EvictionClient
	Events(namespace string) EventClient
	Services(namespace string) ServiceClient
	EndpointSlices(namespace string) EndpointSliceClient
	// Secrets and ConfigMaps in namespace, which a node may read only while a pod bound
	// to it references them (image pull secrets, volumes, env).
	Secrets(namespace string) SecretClient
	ConfigMaps(namespace string) ConfigMapClient
}

// NodeClient reads and writes Nodes; Patch with the subresource "status" patches status.
type NodeClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Create(ctx context.Context, node *corev1.Node, opts metav1.CreateOptions) (*corev1.Node, error)
	Update(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
	UpdateStatus(ctx context.Context, node *corev1.Node, opts metav1.UpdateOptions) (*corev1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
	// List and Watch serve the Service proxy's informer on its own Node.
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// LeaseClient reads and writes Leases (the node's heartbeat).
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// PodClient reads pods and reports their status; List and Watch with the field
// selector spec.nodeName=<node> see the pods bound to a node. Create and Delete serve
// mirror pods, the API's view of static pods (Delete with a UID precondition, so a
// mirror pod recreated meanwhile is not the one deleted); Delete with grace period 0
// and a UID precondition is also how a node confirms that a pod it was asked to
// delete has no containers left.
type PodClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error)
}

// EvictionClient evicts pods through the pods/eviction subresource, which deletes the
// pod gracefully unless a disruption budget forbids it.
type EvictionClient interface {
	Evict(ctx context.Context, eviction *policyv1.Eviction) error
}

// EventClient posts Events.
type EventClient interface {
	Create(ctx context.Context, event *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error)
}

// ServiceClient lists and watches Services.
type ServiceClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ServiceList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// EndpointSliceClient lists and watches EndpointSlices.
type EndpointSliceClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*discoveryv1.EndpointSliceList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// SecretClient reads one Secret.
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
}

// ConfigMapClient reads one ConfigMap.
type ConfigMapClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
}

// protobufContentType is the media type of Kubernetes' protobuf encoding, which every
// kind this client speaks has. Decoding it takes a fraction of the CPU JSON takes.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// Client is the Interface over HTTP.
type Client struct {
	core         rest.Interface // /api/v1
	coordination rest.Interface // /apis/coordination.k8s.io/v1
	discovery    rest.Interface // /apis/discovery.k8s.io/v1
	params       runtime.ParameterCodec
}

var _ Interface = (*Client)(nil)

// New builds a Client from cfg, as client-go's kubernetes.NewForConfig would: one HTTP
// client (TLS, client certificates reloaded from their files, connection reuse) and
// one rate limiter (cfg.QPS and cfg.Burst, client-go's defaults when zero) shared by
// every API group, protobuf on the wire as kubelet's (JSON where a server answers in it).
func New(cfg *rest.Config) (*Client, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("API scheme: %w", err)
	}
	return NewWithScheme(cfg, scheme)
}

// NewWithScheme is New with a scheme from NewScheme that the caller shares between
// clients: a scheme is read-only once built, and building one per client costs tens of
// kilobytes each, which matters to a process holding thousands of clients (the node
// simulator).
func NewWithScheme(cfg *rest.Config, scheme *runtime.Scheme) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = protobufContentType
	cfg.AcceptContentTypes = protobufContentType + ",application/json"
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("client for %s: burst is required to be greater than 0 when QPS is set (QPS %v)", cfg.Host, cfg.QPS)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	c := &Client{params: runtime.NewParameterCodec(scheme)}
	for _, g := range []struct {
		client  *rest.Interface
		apiPath string
		gv      schema.GroupVersion
	}{
		{&c.core, "/api", corev1.SchemeGroupVersion},
		{&c.coordination, "/apis", coordinationv1.SchemeGroupVersion},
		{&c.discovery, "/apis", discoveryv1.SchemeGroupVersion},
	} {
		if *g.client, err = groupClient(cfg, httpClient, g.apiPath, g.gv, codecs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// groupClient is the REST client of one API group version.
func groupClient(cfg *rest.Config, httpClient *http.Client, apiPath string, gv schema.GroupVersion, codecs runtime.NegotiatedSerializer) (rest.Interface, error) {
	c := *cfg
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = codecs
	rc, err := rest.RESTClientForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client for %s %s: %w", cfg.Host, gv, err)
	}
	return rc, nil
}

// Nodes implements Interface.
func (c *Client) Nodes() NodeClient {
	return resource[*corev1.Node, *corev1.NodeList]{
		client: c.core, params: c.params, name: "nodes",
		newObject: func() *corev1.Node { return &corev1.Node{} },
		newList:   func() *corev1.NodeList { return &corev1.NodeList{} },
	}
}

// Leases implements Interface.
func (c *Client) Leases(namespace string) LeaseClient {
	return resource[*coordinationv1.Lease, *coordinationv1.LeaseList]{
		client: c.coordination, params: c.params, name: "leases", namespace: namespace,
		newObject: func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		newList:   func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} },
	}
}

// Pods implements Interface.
func (c *Client) Pods(namespace string) PodClient {
	return resource[*corev1.Pod, *corev1.PodList]{
		client: c.core, params: c.params, name: "pods", namespace: namespace,
		newObject: func() *corev1.Pod { return &corev1.Pod{} },
		newList:   func() *corev1.PodList { return &corev1.PodList{} },
	}
}

// Events implements Interface.
func (c *Client) Events(namespace string) EventClient {
	return resource[*corev1.Event, *corev1.EventList]{
		client: c.core, params: c.params, name: "events", namespace: namespace,
		newObject: func() *corev1.Event { return &corev1.Event{} },
		newList:   func() *corev1.EventList { return &corev1.EventList{} },
	}
}

// Services implements Interface.
func (c *Client) Services(namespace string) ServiceClient {
	return resource[*corev1.Service, *corev1.ServiceList]{
		client: c.core, params: c.params, name: "services", namespace: namespace,
		newObject: func() *corev1.Service { return &corev1.Service{} },
		newList:   func() *corev1.ServiceList { return &corev1.ServiceList{} },
	}
}

// EndpointSlices implements Interface.
func (c *Client) EndpointSlices(namespace string) EndpointSliceClient {
	return resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{
		client: c.discovery, params: c.params, name: "endpointslices", namespace: namespace,
		newObject: func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} },
		newList:   func() *discoveryv1.EndpointSliceList { return &discoveryv1.EndpointSliceList{} },
	}
}

// Secrets implements Interface.
func (c *Client) Secrets(namespace string) SecretClient {
	return resource[*corev1.Secret, *corev1.SecretList]{
		client: c.core, params: c.params, name: "secrets", namespace: namespace,
		newObject: func() *corev1.Secret { return &corev1.Secret{} },
		newList:   func() *corev1.SecretList { return &corev1.SecretList{} },
	}
}

// ConfigMaps implements Interface.
func (c *Client) ConfigMaps(namespace string) ConfigMapClient {
	return resource[*corev1.ConfigMap, *corev1.ConfigMapList]{
		client: c.core, params: c.params, name: "configmaps", namespace: namespace,
		newObject: func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		newList:   func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
	}
}

// Evictions implements Interface.
func (c *Client) Evictions(namespace string) EvictionClient {
	return evictions{core: c.core, namespace: namespace}
}

// evictions posts policy/v1 Evictions to pods/<name>/eviction in the core group, as
// client-go's EvictV1 does.
type evictions struct {
	core      rest.Interface
	namespace string
}

// Evict evicts the pod eviction names in the client's namespace (or, when the client
// was made for every namespace, in eviction's namespace).
func (e evictions) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	ns := e.namespace
	if ns == metav1.NamespaceAll {
		ns = eviction.Namespace
	}
	if eviction.Namespace != "" && eviction.Namespace != ns {
		return fmt.Errorf("evicting pod %s/%s: the eviction's namespace is not the client's (%q)", eviction.Namespace, eviction.Name, ns)
	}
	return e.core.Post().
		Namespace(ns).
		Resource("pods").
		Name(eviction.Name).
		SubResource("eviction").
		Body(eviction).
		Do(ctx).
		Error()
}
