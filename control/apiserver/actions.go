package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/plinth/plinth/control/storage"
)

// action serves POST to a resource's action subresource (pods/eviction, pods/binding).
func (s *Server) action(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	act, ok := r.Actions[info.subresource]
	if !ok {
		writeError(w, apierrors.NewMethodNotSupported(s.groupResource(r), "create"))
		return
	}
	opts, body, ok := s.readOptionsAndBody(w, req)
	if !ok {
		return
	}
	in := act.New()
	if _, err := decodeInto(in, req, body, opts.fieldValidation); err != nil {
		writeError(w, err)
		return
	}
	if acc, err := meta.Accessor(in); err == nil {
		// The body names the object too; it must agree with the URL.
		if n := acc.GetName(); n != "" && n != info.name {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("name in the %s body (%s) does not match the URL (%s)", info.subresource, n, info.name)))
			return
		}
		if ns := acc.GetNamespace(); ns != "" && ns != info.namespace {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("namespace in the %s body (%s) does not match the URL (%s)", info.subresource, ns, info.namespace)))
			return
		}
	}
	out, code, err := act.Handle(req.Context(), s.Objects(r), info.namespace, info.name, in)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, code, out)
}

// decodeInto reads a body of any registered type into obj.
func decodeInto(obj runtime.Object, req *http.Request, body []byte, validation string) ([]string, error) {
	kinds, _, err := clientscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(kinds) == 0 {
		return nil, apierrors.NewInternalError(fmt.Errorf("action body %T is not a registered kind: %v", obj, err))
	}
	r := &Resource{GroupVersion: kinds[0].GroupVersion(), Kind: kinds[0].Kind, New: func() runtime.Object { return obj }}
	decoded, warnings, err := decodeBody(r, req, body, validation)
	if err != nil {
		return nil, err
	}
	if decoded != obj {
		// decodeBody decodes into r.New(), which is obj itself.
		return nil, apierrors.NewInternalError(fmt.Errorf("decoded into a different object"))
	}
	return warnings, nil
}

// Objects returns the stored objects of r, for hooks and actions.
func (s *Server) Objects(r *Resource) Objects { return resourceObjects{s: s, r: r} }

type resourceObjects struct {
	s *Server
	r *Resource
}

func (o resourceObjects) Get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	obj, _, err := o.s.read(ctx, o.r, requestInfo{namespace: namespace, name: name})
	return obj, err
}

func (o resourceObjects) List(ctx context.Context, namespace string, fieldSelector fields.Selector) ([]runtime.Object, error) {
	if fieldSelector == nil {
		fieldSelector = fields.Everything()
	}
	out, err := o.s.listPage(ctx, o.r, namespace, selector{labels: labels.Everything(), fields: fieldSelector}, 0, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	// Listed objects may be the cache's own; the caller may change what it gets.
	copies := make([]runtime.Object, len(out.objects))
	for i, obj := range out.objects {
		copies[i] = obj.DeepCopyObject()
	}
	return copies, nil
}

func (o resourceObjects) Update(ctx context.Context, namespace, name string, mutate func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return o.update(ctx, requestInfo{namespace: namespace, name: name}, mutate)
}

func (o resourceObjects) UpdateStatus(ctx context.Context, namespace, name string, mutate func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if !o.r.HasStatus {
		return nil, apierrors.NewNotFound(o.s.groupResource(o.r), name+"/status")
	}
	return o.update(ctx, requestInfo{namespace: namespace, name: name, subresource: "status"}, mutate)
}

func (o resourceObjects) update(ctx context.Context, info requestInfo, mutate func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	out, _, err := o.s.guaranteedUpdate(ctx, o.r, info, false, 0, func(old runtime.Object) (runtime.Object, error) {
		obj, err := mutate(old)
		if err != nil {
			return nil, err
		}
		// Hooks write from what they read: let guaranteedUpdate retry on conflicts.
		if acc, err := meta.Accessor(obj); err == nil {
			acc.SetResourceVersion("")
		}
		return obj, nil
	})
	return out, err
}

func (o resourceObjects) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	obj, _, err := o.s.deleteObject(ctx, o.r, namespace, name, opts)
	return obj, err
}
