package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func (f responseFormat) String() string {
	return [...]string{formatJSON: "JSON", formatTable: "Table", formatProtobuf: "protobuf"}[f]
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
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/vnd.kubernetes.protobuf", formatProtobuf},
		{"application/json;as=Table;g=meta.k8s.io;v=v1beta1, application/json", formatJSON},
		{";;, ,/,application/vnd.kubernetes.protobuf", formatProtobuf},
	} {
		if got := negotiateFormat(tc.accept); got != tc.want {
			t.Errorf("Accept %q: %s, want %s", tc.accept, got, tc.want)
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
	if got := responseFormatFor(req, nodes); got != formatProtobuf {
		t.Errorf("Nodes: %s, want protobuf", got)
	}
	if got := responseFormatFor(req, widgets); got != formatJSON {
		t.Errorf("a kind outside client-go's scheme: %s, want JSON", got)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if got, obj := responseFormatFor(req, nodes), objectFormat(req, nodes); got != formatTable || obj != formatJSON {
		t.Errorf("Table asked: %s for reads and %s for writes, want Table and JSON", got, obj)
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
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got := negotiateFormat(accept)
		lower := strings.ToLower(accept)
		switch {
		case got == formatProtobuf && !strings.Contains(lower, protobufContentType):
			t.Fatalf("Accept %q: protobuf, which it does not name", accept)
		case got == formatTable && !strings.Contains(accept, "Table"):
			t.Fatalf("Accept %q: a Table, which it does not ask for", accept)
		case got != formatJSON && got != formatTable && got != formatProtobuf:
			t.Fatalf("Accept %q: format %d", accept, got)
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
