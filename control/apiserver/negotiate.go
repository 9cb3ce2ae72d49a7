package apiserver

import (
	"cmp"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// protobufContentType is Kubernetes' protobuf media type, which kubelet and the
// controllers of kube-controller-manager send and ask for with built-in kinds.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// protobufWatchContentType is the Content-Type of a protobuf watch stream: frames of a
// 4-byte big-endian length and a metav1.WatchEvent whose object is in the envelope.
const protobufWatchContentType = protobufContentType + ";stream=watch"

// The protobuf codecs of every kind in client-go's scheme. They hold no state.
var (
	// protobufCodec reads and writes one object in Kubernetes' envelope (a magic
	// prefix, then apiVersion, kind and the object's own protobuf bytes).
	protobufCodec = protobuf.NewSerializer(clientscheme.Scheme, clientscheme.Scheme)
	// protobufListCodec writes lists item by item to the response, rather than
	// building one buffer of the whole list first.
	protobufListCodec = protobuf.NewSerializerWithOptions(clientscheme.Scheme, clientscheme.Scheme,
		protobuf.SerializerOptions{StreamingCollectionsEncoding: true})
	// protobufRawCodec writes a message without the envelope: watch events.
	protobufRawCodec = protobuf.NewRawSerializer(clientscheme.Scheme, clientscheme.Scheme)
)

// responseFormat is how a response carries objects.
type responseFormat int

const (
	formatJSON responseFormat = iota
	// formatTable is a meta.k8s.io/v1 Table in JSON, which kubectl get asks for.
	formatTable
	// formatProtobuf is Kubernetes' protobuf, which kubelet and controllers ask for.
	formatProtobuf
	// formatMetadataJSON is meta.k8s.io/v1 PartialObjectMetadata (an object's
	// metadata alone; PartialObjectMetadataList for a list) in JSON, and
	// formatMetadataProtobuf the same in protobuf, which client-go's metadata client
	// (and so kube-controller-manager's garbage collector) asks for.
	formatMetadataJSON
	formatMetadataProtobuf
)

// protobuf reports whether f is written in Kubernetes' protobuf.
func (f responseFormat) protobuf() bool { return f == formatProtobuf || f == formatMetadataProtobuf }

// metadataOnly reports whether f carries objects as PartialObjectMetadata.
func (f responseFormat) metadataOnly() bool {
	return f == formatMetadataJSON || f == formatMetadataProtobuf
}

// responseShape is what a response carries, which decides the conversions it can
// serve: as=PartialObjectMetadata for one object (a get, a write, each event of a
// watch), as=PartialObjectMetadataList for a list.
type responseShape int

const (
	shapeObject responseShape = iota
	shapeList
)

// negotiateFormat picks a response format from an Accept header as a Kubernetes
// client expects: media ranges by descending q (q=0 is "not acceptable"), the more
// specific before wildcards at equal q, else in the order listed; the first one this
// server serves wins. JSON serves application/json, application/* and */*; protobuf
// serves application/vnd.kubernetes.protobuf; a Table needs application/json with
// as=Table;g=meta.k8s.io;v=v1; PartialObjectMetadata (for an object or a watch) and
// PartialObjectMetadataList (for a list) with g=meta.k8s.io;v=v1 are served in both
// JSON and protobuf. Other conversions (Tables in protobuf, meta.k8s.io/v1beta1) are
// not served.
//
// No header, or one naming nothing served and no conversion, means JSON (neither
// kubectl nor client-go sends such a header, and an answer in JSON serves a curl user
// better than kube-apiserver's 406). A header naming conversions and nothing served is
// not acceptable (ok is false), as in kube-apiserver: a client that asked only for
// metadata cannot decode a full object.
func negotiateFormat(accept string, shape responseShape) (format responseFormat, ok bool) {
	type candidate struct {
		format      responseFormat
		q           float64
		specificity int
	}
	var candidates []candidate
	conversionAsked := false
	for part := range strings.SplitSeq(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mediaType, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || !(q > 0 && q <= 1) {
				continue
			}
		}
		conversionAsked = conversionAsked || params["as"] != ""
		if format, specificity, ok := servedFormat(mediaType, params, shape); ok {
			candidates = append(candidates, candidate{format: format, q: q, specificity: specificity})
		}
	}
	if len(candidates) == 0 {
		return formatJSON, !conversionAsked
	}
	best := slices.MinFunc(candidates, func(a, b candidate) int {
		if c := cmp.Compare(b.q, a.q); c != 0 {
			return c
		}
		return cmp.Compare(b.specificity, a.specificity)
	})
	return best.format, true
}

// servedFormat is the format that serves one media range for a response of shape,
// and how specific the range is (2 type/subtype, 1 type/*, 0 */*).
func servedFormat(mediaType string, params map[string]string, shape responseShape) (responseFormat, int, bool) {
	as := params["as"]
	if as != "" && (params["g"] != "meta.k8s.io" || params["v"] != "v1") {
		return formatJSON, 0, false
	}
	metadataKind := "PartialObjectMetadata"
	if shape == shapeList {
		metadataKind = "PartialObjectMetadataList"
	}
	switch {
	case mediaType == "application/json" && as == "":
		return formatJSON, 2, true
	case mediaType == "application/json" && as == "Table":
		return formatTable, 2, true
	case mediaType == "application/json" && as == metadataKind:
		return formatMetadataJSON, 2, true
	case mediaType == protobufContentType && as == "":
		return formatProtobuf, 2, true
	case mediaType == protobufContentType && as == metadataKind:
		return formatMetadataProtobuf, 2, true
	case mediaType == "application/*" && as == "":
		return formatJSON, 1, true
	case mediaType == "*/*" && as == "":
		return formatJSON, 0, true
	}
	return formatJSON, 0, false
}

// responseFormatFor is the format of a response of shape about r: what the request's
// Accept header negotiates, except that full objects in protobuf are only for kinds
// client-go's scheme knows (every built-in kind; a kind it lacks could not be decoded
// from protobuf by a client either), which otherwise get JSON. PartialObjectMetadata
// is served in protobuf for every kind: every client knows it. The error is a 406 for
// a header that names only conversions this server does not serve.
func responseFormatFor(req *http.Request, r *Resource, shape responseShape) (responseFormat, error) {
	accept := req.Header.Get("Accept")
	format, ok := negotiateFormat(accept, shape)
	if !ok {
		return format, notAcceptable(accept)
	}
	if format == formatProtobuf && !speaksProtobuf(r) {
		return formatJSON, nil
	}
	return format, nil
}

// objectFormat is responseFormatFor for a response that is one object written, which
// is never a Table (writes answer with the object written, in JSON when a Table is
// asked for) but may be its metadata. Writes negotiate before writing, so a request
// that would be answered with a 406 changes nothing.
func objectFormat(req *http.Request, r *Resource) (responseFormat, error) {
	f, err := responseFormatFor(req, r, shapeObject)
	if f == formatTable {
		f = formatJSON
	}
	return f, err
}

// notAcceptable is kube-apiserver's answer to an Accept header it cannot serve.
func notAcceptable(accept string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusNotAcceptable,
		Reason: metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("only the following media types are accepted: application/json, %s, and as=Table, "+
			"as=PartialObjectMetadata or as=PartialObjectMetadataList with g=meta.k8s.io;v=v1; Accept was %q", protobufContentType, accept),
	}}
}

// speaksProtobuf reports whether client-go's scheme has r's kind and its list kind.
func speaksProtobuf(r *Resource) bool {
	return clientscheme.Scheme.Recognizes(r.GroupVersionKind()) &&
		clientscheme.Scheme.Recognizes(r.GroupVersion.WithKind(r.Kind+"List"))
}

// writeProtobuf writes one object in the protobuf envelope; its kind must be set.
func writeProtobuf(w http.ResponseWriter, code int, obj runtime.Object) {
	out := &protobufResponse{w: w, code: code}
	if err := protobufCodec.Encode(obj, out); err != nil && !out.started {
		writeError(w, apierrors.NewInternalError(err))
	}
}

// protobufResponse starts the response at the first write. The protobuf codec encodes
// an object into a buffer of its own and writes it in one write, so a failure comes
// before anything was written and can still be answered with a Status, and the
// encoded object is not copied into another buffer first.
type protobufResponse struct {
	w       http.ResponseWriter
	code    int
	started bool
}

func (p *protobufResponse) Write(data []byte) (int, error) {
	if !p.started {
		p.started = true
		p.w.Header().Set("Content-Type", protobufContentType)
		p.w.WriteHeader(p.code)
	}
	return p.w.Write(data)
}

// protobufList builds r's typed list (a NodeList for Nodes) around objects, which
// must be r's type.
func protobufList(r *Resource, lm metav1.ListMeta, objects []runtime.Object) (runtime.Object, error) {
	gvk := r.GroupVersion.WithKind(r.Kind + "List")
	list, err := clientscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, objects); err != nil {
		return nil, err
	}
	acc, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(lm.ResourceVersion)
	acc.SetContinue(lm.Continue)
	acc.SetRemainingItemCount(lm.RemainingItemCount)
	list.GetObjectKind().SetGroupVersionKind(gvk)
	return list, nil
}
