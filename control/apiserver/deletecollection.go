package apiserver

import (
	"context"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth/plinth/control/storage"
)

// deleteCollection serves DELETE on a collection (verb deletecollection), as client-go's
// DeleteCollection sends it: every object the label and field selectors match, in the
// namespace of the URL or in all of them, is deleted with the request's DeleteOptions,
// one after another as a DELETE of each would (preconditions, propagation, grace
// periods, finalizers, dry run). Authorization is the collection's; admission sees each
// deletion as a "delete" of that object, so a guard on single objects (the system
// namespaces, a node's own objects) cannot be stepped around. An object that is gone
// by the time its turn comes is skipped; the first other failure ends the request with
// its error, leaving the objects before it deleted, as kube-apiserver does. The
// response is the list of what the deletions returned: the objects removed, in their
// last state, and those marked for deletion.
// A subresource never gets here: checkScope refuses one without an object name.
func (s *Server) deleteCollection(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
	format, err := responseFormatFor(req, r, shapeList)
	if err != nil {
		writeError(w, err)
		return
	}
	sel, err := parseSelector(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := parseDeleteOptions(w, req, s)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := req.Context()
	page, err := s.listPage(ctx, r, info.namespace, sel, 0, storage.ListOptions{})
	if err != nil {
		writeError(w, err)
		return
	}
	// Names only: listed objects may be the cache's shared copies, and each deletion
	// reads its object afresh anyway.
	type target struct{ namespace, name string }
	targets := make([]target, 0, len(page.objects))
	for _, obj := range page.objects {
		acc, err := meta.Accessor(obj)
		if err != nil {
			writeError(w, apierrors.NewInternalError(err))
			return
		}
		targets = append(targets, target{acc.GetNamespace(), acc.GetName()})
	}
	deleted := make([]runtime.Object, 0, len(targets))
	for _, t := range targets {
		obj, _, err := s.deleteObject(asSingleDelete(ctx, t.namespace, t.name), r, t.namespace, t.name, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			writeError(w, err)
			return
		}
		deleted = append(deleted, obj)
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.revision, 10)}
	if format == formatProtobuf {
		s.writeProtobufList(w, r, lm, deleted)
		return
	}
	writeJSONList(w, r, lm, deleted)
}

// asSingleDelete returns ctx with the request's attributes turned into those of a
// DELETE of one object, for admission.
func asSingleDelete(ctx context.Context, namespace, name string) context.Context {
	a, ok := RequestAttributes(ctx)
	if !ok {
		return ctx
	}
	a.Verb, a.Namespace, a.Name = "delete", namespace, name
	return context.WithValue(ctx, attributesKey{}, a)
}
