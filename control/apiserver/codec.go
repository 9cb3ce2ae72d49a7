package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/plinth/plinth/control/storage"
)

// Field validation directives, as the fieldValidation query parameter names them.
const (
	fieldValidationStrict = "Strict"
	fieldValidationWarn   = "Warn"
	fieldValidationIgnore = "Ignore"
)

// decodeBody reads a create or update body, JSON or protobuf by its content type.
func decodeBody(r *Resource, req *http.Request, body []byte, validation string) (runtime.Object, []string, error) {
	mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if mediaType != protobufContentType {
		return decodeObject(r, body, validation)
	}
	obj, _, err := protobufCodec.Decode(body, nil, r.New())
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s from protobuf: %v", r.Kind, err))
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk != r.GroupVersionKind() {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s", gvk, r.GroupVersionKind()))
	}
	return obj, nil, nil
}

// decodeObject reads JSON into a new typed object of the resource. Unknown and duplicate
// fields fail under Strict, become warnings under Warn, and are dropped under Ignore.
func decodeObject(r *Resource, body []byte, validation string) (runtime.Object, []string, error) {
	obj := r.New()
	strict, err := sigsjson.UnmarshalStrict(body, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", r.Kind, err))
	}
	var warnings []string
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		switch validation {
		case fieldValidationStrict:
			return nil, nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
		case fieldValidationWarn:
			warnings = msgs
		}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	want := r.GroupVersionKind()
	if (gvk.Kind != "" && gvk.Kind != want.Kind) || (gvk.Version != "" && gvk.GroupVersion() != want.GroupVersion()) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s", gvk, want))
	}
	return obj, warnings, nil
}

// fromStorage decodes a stored object and stamps its resourceVersion from etcd.
func fromStorage(r *Resource, kv storage.KV) (runtime.Object, error) {
	obj := r.New()
	if err := json.Unmarshal(kv.Value, obj); err != nil {
		return nil, fmt.Errorf("stored %s at %s is corrupt: %w", r.Kind, kv.Key, err)
	}
	setResourceVersion(obj, kv.Revision)
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersionKind())
	return obj, nil
}

// toStorage encodes an object for etcd. The resourceVersion is not stored: the key's
// mod revision is the resourceVersion.
func toStorage(r *Resource, obj runtime.Object) ([]byte, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := accessor.GetResourceVersion()
	accessor.SetResourceVersion("")
	defer accessor.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersionKind())
	return json.Marshal(obj)
}

// stampKind sets obj's apiVersion and kind to gvk unless they already are: objects
// from the cache are shared between requests, and a decoded object already carries
// its kind, so the common case writes nothing.
func stampKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

func setResourceVersion(obj runtime.Object, rev int64) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

// parseResourceVersion reads a resourceVersion; "" and "0" are 0.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q is not a non-negative integer", rv))
	}
	return n, nil
}

// specChanged reports whether anything but metadata and status differs, which is what
// bumps metadata.generation. Typed objects are compared field by field with the API's
// semantic equality (nil and empty lists, and equal quantities written differently,
// are the same spec), which costs a fraction of converting both to unstructured maps:
// every Lease renewal and Node update passes through here.
func specChanged(a, b runtime.Object) (bool, error) {
	va, vb, ok := typedPair(a, b)
	if !ok {
		return specChangedUnstructured(a, b)
	}
	for i := range va.NumField() {
		switch va.Type().Field(i).Name {
		case "TypeMeta", "ObjectMeta", "Status":
			continue
		}
		if !apiequality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return true, nil
		}
	}
	return false, nil
}

// typedPair returns the structs behind a and b when both are pointers to the same
// struct type, as every built-in kind is.
func typedPair(a, b runtime.Object) (reflect.Value, reflect.Value, bool) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != reflect.Pointer || va.Type() != vb.Type() || va.IsNil() || vb.IsNil() {
		return reflect.Value{}, reflect.Value{}, false
	}
	if va.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, reflect.Value{}, false
	}
	return va.Elem(), vb.Elem(), true
}

// specChangedUnstructured is specChanged for objects that are not typed structs.
func specChangedUnstructured(a, b runtime.Object) (bool, error) {
	ma, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return false, err
	}
	mb, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return false, err
	}
	for _, m := range []map[string]any{ma, mb} {
		delete(m, "metadata")
		delete(m, "status")
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	ja, _ := json.Marshal(ma)
	jb, _ := json.Marshal(mb)
	return string(ja) != string(jb), nil
}

// withStatusOf returns a copy of obj whose status is a copy of src's. Neither argument
// is changed: either may be a cached object other requests share.
func withStatusOf(r *Resource, obj, src runtime.Object) (runtime.Object, error) {
	out := obj.DeepCopyObject()
	vo, _, ok := typedPair(out, src)
	if !ok {
		return withStatusOfUnstructured(r, obj, src)
	}
	status := vo.FieldByName("Status")
	if !status.IsValid() {
		return out, nil
	}
	srcCopy := reflect.ValueOf(src.DeepCopyObject()).Elem()
	status.Set(srcCopy.FieldByName("Status"))
	return out, nil
}

// withStatusOfUnstructured is withStatusOf through the unstructured form, for objects
// that are not typed structs.
func withStatusOfUnstructured(r *Resource, obj, src runtime.Object) (runtime.Object, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	s, err := runtime.DefaultUnstructuredConverter.ToUnstructured(src)
	if err != nil {
		return nil, err
	}
	if st, ok := s["status"]; ok {
		m["status"] = st
	} else {
		delete(m, "status")
	}
	out := r.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, out); err != nil {
		return nil, err
	}
	return out, nil
}
