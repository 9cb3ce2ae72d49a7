package apiserver

import (
	"context"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Hooks are the optional per-resource behaviours that need more than the object: claims
// on shared resources (cluster IPs, node ports), graceful deletion, lifetimes, and
// POST-only subresources. A Resource embeds them.
type Hooks struct {
	// BeforeCreate runs after defaulting and validation, before the object is stored,
	// and may claim what the object needs (a cluster IP). When storing then fails,
	// Release runs with the same object so nothing leaks.
	BeforeCreate func(ctx context.Context, obj runtime.Object) error
	// BeforeUpdate is BeforeCreate for updates, with the stored object; claims the
	// update drops are released by it too, after the write succeeded (AfterUpdate).
	BeforeUpdate func(ctx context.Context, obj, old runtime.Object) error
	// AfterUpdate runs after an update was stored.
	AfterUpdate func(ctx context.Context, obj, old runtime.Object)
	// Release gives back what the object claimed; it runs after the object is deleted
	// from storage, or when its creation failed after BeforeCreate.
	Release func(ctx context.Context, obj runtime.Object)

	// GracePeriod decides how long a DELETE waits before the object is removed:
	// requested is the client's gracePeriodSeconds (nil when not given). Zero removes
	// it at once; more marks it with deletionTimestamp and deletionGracePeriodSeconds
	// and leaves it to its owner (a pod to its node) to finish. Nil means zero.
	GracePeriod func(obj runtime.Object, requested *int64) int64

	// TTL gives a new object a lifetime after which storage drops it (events).
	TTL func(obj runtime.Object) time.Duration

	// Actions are POST-only subresources, such as pods/eviction and pods/binding.
	Actions map[string]Action
	// Readers are GET-only subresources that write their own response, such as
	// pods/log, which streams from the pod's node.
	Readers map[string]Reader
}

// Reader is a GET-only subresource.
type Reader struct {
	// Kind is the discovery kind of the subresource ("Pod" for pods/log).
	Kind string
	// Serve answers a GET of the subresource of the named object, which the request
	// was authorized for.
	Serve func(w http.ResponseWriter, req *http.Request, objects Objects, namespace, name string)
}

// Action is a POST-only subresource.
type Action struct {
	// New returns an empty request body object, e.g. &policyv1.Eviction{}.
	New func() runtime.Object
	// Handle performs the action on the named object. It returns the response object
	// and HTTP status code.
	Handle func(ctx context.Context, objects Objects, namespace, name string, body runtime.Object) (runtime.Object, int, error)
}

// Objects is what hooks and actions may do with the stored objects of one resource,
// with the same semantics (validation, conflicts, graceful deletion) as the API.
type Objects interface {
	Get(ctx context.Context, namespace, name string) (runtime.Object, error)
	// List reads the objects in namespace ("" for all) matching fieldSelector (nil for
	// all), at etcd's latest revision: what a write just stored is seen.
	List(ctx context.Context, namespace string, fieldSelector fields.Selector) ([]runtime.Object, error)
	// Update reads the object, applies mutate and writes it back, retrying on
	// conflicts with a fresh read.
	Update(ctx context.Context, namespace, name string, mutate func(obj runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// UpdateStatus is Update through the status subresource: only status changes.
	UpdateStatus(ctx context.Context, namespace, name string, mutate func(obj runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, error)
}

// Attributes describe a request for authorization and admission.
type Attributes struct {
	User User
	// Verb is get, list, watch, create, update, patch, delete, or the lower-case HTTP
	// method for non-resource requests.
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is set for non-resource requests (discovery, /version, /openapi, ...).
	Path string
}

// ResourceRequest reports whether the request names a resource.
func (a Attributes) ResourceRequest() bool { return a.Resource != "" }

// Authenticator finds who sent a request. ok is false when the request carries no
// credentials it recognises; err means credentials that are present but invalid
// (an expired token), which is refused even if another authenticator would accept.
type Authenticator interface {
	Authenticate(req *http.Request) (u User, ok bool, err error)
}

// Authorizer decides from the request alone; Admitter then sees the objects.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string)
}

// Admitter checks a write with its objects: obj is the new object (nil on delete),
// old the stored one (nil on create). An error refuses the write; return an
// apierrors status (Forbidden, Invalid) to choose the response.
type Admitter interface {
	Admit(ctx context.Context, a Attributes, obj, old runtime.Object) error
}
