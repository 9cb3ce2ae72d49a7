package apiserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth/plinth/control/storage"
)

// selector is a request's label and field selectors.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func (sel selector) empty() bool { return sel.labels.Empty() && sel.fields.Empty() }

func parseSelector(r *Resource, req *http.Request) (selector, error) {
	q := req.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", q.Get("labelSelector"), err))
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: %v", q.Get("fieldSelector"), err))
	}
	known := objectFields(r, r.New())
	for _, req := range fs.Requirements() {
		if !known.Has(req.Field) {
			return selector{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return selector{labels: ls, fields: fs}, nil
}

// objectFields are the fields a field selector can match on obj.
func objectFields(r *Resource, obj runtime.Object) fields.Set {
	set := fields.Set{}
	if acc, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = acc.GetName()
		if r.Namespaced {
			set["metadata.namespace"] = acc.GetNamespace()
		}
	}
	if r.SelectableFields != nil {
		for k, v := range r.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

func (sel selector) matches(r *Resource, obj runtime.Object) bool {
	if sel.empty() {
		return true
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sel.labels.Matches(labels.Set(acc.GetLabels())) && sel.fields.Matches(objectFields(r, obj))
}

// continueToken is the opaque continue parameter: the revision of the first page and the
// key to resume after.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	Start      string `json:"start"`
}

func encodeContinue(rev int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	var tok continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &tok)
	}
	if err != nil || tok.APIVersion != "meta.k8s.io/v1" || tok.Revision <= 0 || tok.Start == "" {
		return tok, apierrors.NewBadRequest(fmt.Sprintf("continue %q is not a token this server issued", s))
	}
	return tok, nil
}

// listed is one page of matching objects.
type listed struct {
	objects   []runtime.Object
	revision  int64
	cont      string
	remaining *int64
}

func (s *Server) list(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) {
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
	q := req.URL.Query()
	var limit int64
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.ParseInt(v, 10, 64); err != nil || limit < 0 {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("limit %q is not a non-negative integer", v)))
			return
		}
	}
	rev, err := parseResourceVersion(q.Get("resourceVersion"))
	if err != nil {
		writeError(w, err)
		return
	}
	opts := storage.ListOptions{}
	switch q.Get("resourceVersionMatch") {
	case "Exact":
		if rev == 0 {
			writeError(w, apierrors.NewBadRequest("resourceVersionMatch=Exact needs a resourceVersion"))
			return
		}
		opts.Revision = rev
	case "", "NotOlderThan":
	default:
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch %q is not Exact or NotOlderThan", q.Get("resourceVersionMatch"))))
		return
	}
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			writeError(w, err)
			return
		}
		opts.Revision, opts.StartKey = tok.Revision, tok.Start
	}
	page, err := s.listPage(req.Context(), r, info.namespace, sel, limit, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.revision, 10), Continue: page.cont, RemainingItemCount: page.remaining}
	switch format {
	case formatTable:
		t, err := buildTable(r, page.objects, s.cfg.Clock.Now(), q.Get("includeObject"), lm)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t)
		return
	case formatProtobuf:
		s.writeProtobufList(w, r, lm, page.objects)
		return
	case formatMetadataJSON, formatMetadataProtobuf:
		list, err := partialObjectMetadataList(lm, page.objects)
		switch {
		case err != nil:
			writeError(w, apierrors.NewInternalError(err))
		case format.protobuf():
			writeProtobuf(w, http.StatusOK, list)
		default:
			writeJSON(w, http.StatusOK, list)
		}
		return
	}
	writeJSONList(w, r, lm, page.objects)
}

// writeJSONList answers 200 with r's XxxList of objects in JSON.
func writeJSONList(w http.ResponseWriter, r *Resource, lm metav1.ListMeta, objects []runtime.Object) {
	data, err := encodeJSONList(r, lm, objects)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// encodeJSONList writes r's XxxList in JSON (what json.Marshal of the typed list gives,
// with apiVersion and kind on every item), each item encoded straight into the list
// rather than marshalled alone and then validated and copied again as a
// json.RawMessage of a generic list.
func encodeJSONList(r *Resource, lm metav1.ListMeta, objects []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Encode ends each value with a newline, which the next separator replaces.
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	buf.WriteString(`{"kind":`)
	if err := encode(r.Kind + "List"); err != nil {
		return nil, err
	}
	buf.WriteString(`,"apiVersion":`)
	if err := encode(r.GroupVersion.String()); err != nil {
		return nil, err
	}
	buf.WriteString(`,"metadata":`)
	if err := encode(&lm); err != nil {
		return nil, err
	}
	buf.WriteString(`,"items":[`)
	for i, obj := range objects {
		if i > 0 {
			buf.WriteByte(',')
		}
		stampKind(obj, r.GroupVersionKind())
		if err := encode(obj); err != nil {
			return nil, err
		}
	}
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

// writeProtobufList writes r's typed list (a NodeList for Nodes) in protobuf. Items
// go to the response as they are encoded, so a list of thousands of Nodes is never
// held encoded in full; an encoding failure after the first byte can only cut the
// response short, which the client sees as a decoding error.
func (s *Server) writeProtobufList(w http.ResponseWriter, r *Resource, lm metav1.ListMeta, objects []runtime.Object) {
	list, err := protobufList(r, lm, objects)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", protobufContentType)
	w.WriteHeader(http.StatusOK)
	if err := protobufListCodec.Encode(list, w); err != nil {
		s.cfg.Logger.Error("writing a protobuf list", "kind", r.Kind, "err", err)
	}
}

// listPage reads matching objects in key order until limit of them are found (0: all).
// Selectors filter after reading, so several etcd pages may be read for one API page,
// all at the revision of the first.
func (s *Server) listPage(ctx context.Context, r *Resource, namespace string, sel selector, limit int64, opts storage.ListOptions) (listed, error) {
	prefix := selectionPrefix(r, namespace, sel)
	var out listed
	for {
		if limit > 0 {
			opts.Limit = limit - int64(len(out.objects))
		}
		res, err := s.cfg.Store.List(ctx, prefix, opts)
		if errors.Is(err, storage.ErrCompacted) {
			return out, apierrors.NewResourceExpired(fmt.Sprintf("the list from revision %d is too old: it has been compacted; start a new list", opts.Revision))
		}
		if err != nil {
			return out, apierrors.NewInternalError(err)
		}
		out.revision = res.Revision
		opts.Revision = res.Revision
		for _, kv := range res.Items {
			obj, err := s.decodeListed(r, kv)
			if err != nil {
				return out, apierrors.NewInternalError(err)
			}
			if sel.matches(r, obj) {
				out.objects = append(out.objects, obj)
			}
		}
		if !res.More {
			return out, nil
		}
		next := res.Items[len(res.Items)-1].Key + "\x00"
		if limit > 0 && int64(len(out.objects)) >= limit {
			out.cont = encodeContinue(res.Revision, next)
			if sel.empty() {
				n := res.Remaining
				out.remaining = &n
			}
			return out, nil
		}
		opts.StartKey = next
	}
}

// selectionPrefix is the storage prefix a list or watch reads: the collection's, or,
// when the field selector names one object (metadata.name=X, as a node agent's informer
// on its own Node asks), that object's key. The selector is still applied to everything
// read (the key is a prefix too: n1 also reads n10), so narrowing only saves work: with
// thousands of nodes each watching its own Node, every Node write was otherwise read and
// decoded by every node's watch, and every watch began by decoding every Node.
func selectionPrefix(r *Resource, namespace string, sel selector) string {
	if sel.fields != nil && (!r.Namespaced || namespace != "") {
		// A name that is no path segment ("", "..", "a/b") reads the whole collection.
		if name, ok := sel.fields.RequiresExactMatch("metadata.name"); ok && name != "" && len(path.IsValidPathSegmentName(name)) == 0 {
			return r.key(namespace, name)
		}
	}
	return r.listPrefix(namespace)
}
