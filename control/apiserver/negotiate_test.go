package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func (f responseFormat) String() string {
	return [...]string{formatJSON: "JSON", formatTable: "Table", formatProtobuf: "protobuf",
		formatMetadataJSON: "PartialObjectMetadata JSON", formatMetadataProtobuf: "PartialObjectMetadata protobuf"}[f]
}

func TestNegotiateFormat(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   responseFormat
	}{
		// What clients send.
		{"", formatJSON},
		{"application/json", formatJSON},
		{"application/json, */*", formatJSON}, // client-go without a content type
		{"application/vnd.kubernetes.protobuf,application/json", formatProtobuf},       // client-go's typed clients, kubelet
		{"application/vnd.kubernetes.protobuf, */*", formatProtobuf},                   // client-go with ContentType protobuf
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", formatTable}, // kubectl get
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", formatTable},
		{"*/*", formatJSON},
		{"application/*", formatJSON},
		// Order and q.
		{"application/json,application/vnd.kubernetes.protobuf", formatJSON},
		{"application/vnd.kubernetes.protobuf;q=0.5, application/json", formatJSON},
		{"application/json;q=0.5, application/vnd.kubernetes.protobuf;q=0.9", formatProtobuf},
		{"*/*;q=0.8, application/vnd.kubernetes.protobuf;q=0.5", formatJSON},
		{"*/*, application/vnd.kubernetes.protobuf", formatProtobuf}, // specific before wildcard at equal q
		{"application/*, application/vnd.kubernetes.protobuf", formatProtobuf},
		{"application/vnd.kubernetes.protobuf;q=0, application/json;q=0.1", formatJSON}, // q=0: not acceptable
		{"application/vnd.kubernetes.protobuf;q=0", formatJSON},
		{"application/json;q=0.1, application/json;as=Table;g=meta.k8s.io;v=v1", formatTable},
		{"APPLICATION/VND.KUBERNETES.PROTOBUF", formatProtobuf}, // media types are case-insensitive
		// Nothing served, malformed, or conversions not served.
		{"text/html", formatJSON},
		{"application/yaml, application/vnd.kubernetes.protobuf;q=0.2", formatProtobuf},
		{"application/vnd.kubernetes.protobuf;q=abc, application/json;q=0.1", formatJSON},
		{"application/vnd.kubernetes.protobuf;q=2", formatJSON},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json", formatJSON},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/vnd.kubernetes.protobuf", formatProtobuf}, // a list conversion for an object
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1, application/json", formatJSON},
		{"application/json;as=Table;g=meta.k8s.io;v=v1beta1, application/json", formatJSON},
		{";;, ,/,application/vnd.kubernetes.protobuf", formatProtobuf},
	} {
		if got, ok := negotiateFormat(tc.accept, shapeObject); got != tc.want || !ok {
			t.Errorf("Accept %q: %s (acceptable %v), want %s", tc.accept, got, ok, tc.want)
		}
	}
}

// What client-go's metadata client (k8s.io/client-go/metadata) sends: protobuf, then
// JSON, of PartialObjectMetadata for a get, a patch or a watch, of
// PartialObjectMetadataList for a list, then plain JSON for servers without the
// conversion.
func TestNegotiatePartialObjectMetadata(t *testing.T) {
	const (
		objectAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
		listAccept   = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	)
	for _, tc := range []struct {
		accept string
		shape  responseShape
		want   responseFormat
		ok     bool
	}{
		{objectAccept, shapeObject, formatMetadataProtobuf, true},
		{listAccept, shapeList, formatMetadataProtobuf, true},
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", shapeObject, formatMetadataJSON, true},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", shapeList, formatMetadataJSON, true},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.5,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", shapeObject, formatMetadataJSON, true},
		// The object conversion for a list, or the list conversion for an object, falls
		// back to the plain JSON the header also names.
		{objectAccept, shapeList, formatJSON, true},
		{listAccept, shapeObject, formatJSON, true},
		// Nothing but conversions that cannot be served: not acceptable, never a full
		// object to a client that decodes metadata only.
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", shapeList, formatJSON, false},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", shapeObject, formatJSON, false},
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", shapeObject, formatJSON, false},
		{"application/json;as=PartialObjectMetadata;g=example.com;v=v1", shapeObject, formatJSON, false},
		{"application/json;as=Table;g=meta.k8s.io;v=v1beta1", shapeList, formatJSON, false},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, text/html", shapeList, formatJSON, false},
		// Without any conversion asked, something unserved is still JSON.
		{"text/html", shapeObject, formatJSON, true},
	} {
		got, ok := negotiateFormat(tc.accept, tc.shape)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Accept %q (shape %d): %s acceptable %v, want %s acceptable %v", tc.accept, tc.shape, got, ok, tc.want, tc.ok)
		}
	}
}

// A kind client-go's scheme does not know is JSON even when protobuf is asked for:
// no client could decode it.
func TestProtobufOnlyForKindsClientGoKnows(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf,application/json")
	nodes := &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes", Kind: "Node",
		New: func() runtime.Object { return &corev1.Node{} }}
	widgets := &Resource{GroupVersion: schema.GroupVersion{Group: "example.plinth.dev", Version: "v1"}, Plural: "widgets", Kind: "Widget",
		New: func() runtime.Object { return &corev1.ConfigMap{} }}
	if got, err := responseFormatFor(req, nodes, shapeObject); got != formatProtobuf || err != nil {
		t.Errorf("Nodes: %s, %v; want protobuf", got, err)
	}
	if got, err := responseFormatFor(req, widgets, shapeObject); got != formatJSON || err != nil {
		t.Errorf("a kind outside client-go's scheme: %s, %v; want JSON", got, err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	got, _ := responseFormatFor(req, nodes, shapeList)
	if obj, _ := objectFormat(req, nodes); got != formatTable || obj != formatJSON {
		t.Errorf("Table asked: %s for reads and %s for writes, want Table and JSON", got, obj)
	}
	// Every client knows PartialObjectMetadata, whatever the kind it describes.
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
	if got, err := responseFormatFor(req, widgets, shapeObject); got != formatMetadataProtobuf || err != nil {
		t.Errorf("metadata of a kind outside client-go's scheme: %s, %v; want PartialObjectMetadata in protobuf", got, err)
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	if _, err := responseFormatFor(req, nodes, shapeList); !apierrors.IsNotAcceptable(err) {
		t.Errorf("only the object conversion asked of a list: %v, want 406 NotAcceptable", err)
	}
}

// FuzzNegotiateFormat feeds Accept headers to the negotiation: it must never panic,
// and never pick protobuf or a Table that the header does not name.
func FuzzNegotiateFormat(f *testing.F) {
	for _, seed := range []string{
		"", "application/json", "application/vnd.kubernetes.protobuf,application/json",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "*/*;q=0.8, text/html",
		`application/json;charset="utf-8, x";q=0.3, application/vnd.kubernetes.protobuf;q=.4`,
		"application/vnd.kubernetes.protobuf;q=1e-3", ",,;=;", "application/json;as=Table;as=Table",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		for _, shape := range []responseShape{shapeObject, shapeList} {
			got, ok := negotiateFormat(accept, shape)
			lower := strings.ToLower(accept)
			switch {
			case got.protobuf() && !strings.Contains(lower, protobufContentType):
				t.Fatalf("Accept %q: protobuf, which it does not name", accept)
			case got == formatTable && !strings.Contains(accept, "Table"):
				t.Fatalf("Accept %q: a Table, which it does not ask for", accept)
			case got.metadataOnly() && !strings.Contains(accept, "PartialObjectMetadata"):
				t.Fatalf("Accept %q: PartialObjectMetadata, which it does not ask for", accept)
			case !ok && !strings.Contains(lower, "as"):
				t.Fatalf("Accept %q: not acceptable, though it asks for no conversion", accept)
			case !ok && got != formatJSON:
				t.Fatalf("Accept %q: not acceptable, yet format %s", accept, got)
			case got > formatMetadataProtobuf:
				t.Fatalf("Accept %q: format %d", accept, got)
			}
		}
	})
}

// The JSON list written item by item is byte for byte what marshalling the typed list
// gives, with apiVersion and kind on every item, as the generic list wrote before.
func TestJSONListIsTheMarshalledTypedList(t *testing.T) {
	nodes := &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes", Kind: "Node",
		New: func() runtime.Object { return &corev1.Node{} }}
	remaining := int64(3)
	lm := metav1.ListMeta{ResourceVersion: "42", Continue: "abc<&>", RemainingItemCount: &remaining}
	for _, count := range []int{0, 1, 3} {
		want := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: lm, Items: []corev1.Node{}}
		var objects []runtime.Object
		for i := range count {
			n := benchNode()
			n.Name = fmt.Sprintf("n%d", i)
			n.Annotations["html"] = "<b>&</b>"
			objects = append(objects, n.DeepCopy())
			n.TypeMeta = metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}
			want.Items = append(want.Items, *n)
		}
		got, err := encodeJSONList(nodes, lm, objects)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, err := json.Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(wantJSON) {
			t.Fatalf("%d items:\n%s\nwant\n%s", count, got, wantJSON)
		}
	}
}
