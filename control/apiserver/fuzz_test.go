package apiserver

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func fuzzNodes() *Resource {
	return &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes", Kind: "Node",
		New: func() runtime.Object { return &corev1.Node{} }}
}

func fuzzSecrets() *Resource {
	return &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "secrets", Kind: "Secret", Namespaced: true,
		New: func() runtime.Object { return &corev1.Secret{} }}
}

// FuzzDecodeObject feeds request bodies to the decoder as Nodes and as Secrets (whose
// data is base64 in JSON) under every field validation mode: it must never panic,
// Strict must refuse whatever Warn warns about, and what it accepts must encode again.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"a","labels":{"x":"y"}}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"spec":{"bogus":1}}`,
		`{"kind":"Pod"}`,
		`{"metadata":{"name":"a","name":"b"}}`,
		`[]`, `null`, `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"eyJhdXRocyI6e319"}}`,
		`{"kind":"Secret","data":{"a":"not base64!"},"stringData":{"b":"x"},"immutable":true}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1"},"binaryData":{"b":"AAE="}}`,
	} {
		f.Add([]byte(seed))
	}
	resources := []*Resource{fuzzNodes(), fuzzSecrets()}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, r := range resources {
			_, warnings, warnErr := decodeObject(r, body, fieldValidationWarn)
			obj, _, strictErr := decodeObject(r, body, fieldValidationStrict)
			if warnErr == nil && len(warnings) > 0 && strictErr == nil {
				t.Fatalf("%s: Warn warned %v but Strict accepted %q", r.Kind, warnings, body)
			}
			if strictErr == nil {
				if _, err := json.Marshal(obj); err != nil {
					t.Fatalf("%s: accepted object does not encode: %v", r.Kind, err)
				}
			}
		}
	})
}

// FuzzParseSelector feeds label and field selectors to the list parser: it must never
// panic, and an accepted selector must be usable on an object.
func FuzzParseSelector(f *testing.F) {
	for _, seed := range [][2]string{
		{"app=web,tier!=db", "metadata.name=a"},
		{"x in (a,b),!y", "metadata.namespace!=kube-system"},
		{"", "spec.nodeName=n1"}, {"a=", "="}, {"(((", "metadata.name==x,metadata.name!=y"},
	} {
		f.Add(seed[0], seed[1])
	}
	r := &Resource{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, Plural: "leases", Kind: "Lease",
		Namespaced: true, New: func() runtime.Object { return &coordinationv1.Lease{} }}
	lease := &coordinationv1.Lease{}
	lease.Name, lease.Namespace, lease.Labels = "a", "ns", map[string]string{"app": "web"}
	f.Fuzz(func(t *testing.T, labelSel, fieldSel string) {
		req := httptest.NewRequest("GET", "/apis/coordination.k8s.io/v1/leases", nil)
		q := req.URL.Query()
		q.Set("labelSelector", labelSel)
		q.Set("fieldSelector", fieldSel)
		req.URL.RawQuery = q.Encode()
		sel, err := parseSelector(r, req)
		if err != nil {
			return
		}
		_ = sel.matches(r, lease)
	})
}

// FuzzApplyPatch applies arbitrary patches of each type to a stored node: never a panic,
// and a patch that applies yields JSON the decoder reads or refuses with an error.
func FuzzApplyPatch(f *testing.F) {
	current := []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"a","labels":{"x":"1"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`)
	for _, seed := range []string{
		`{"metadata":{"labels":{"y":"2"}}}`,
		`{"spec":{"taints":null}}`,
		`[{"op":"add","path":"/metadata/labels/z","value":"3"}]`,
		`[{"op":"remove","path":"/spec"}]`,
		`{"spec":{"$patch":"replace"}}`,
		`{"metadata":{"labels":{"$retainKeys":["x"]}}}`,
	} {
		for pt := range 3 {
			f.Add([]byte(seed), uint8(pt))
		}
	}
	r := fuzzNodes()
	patchTypes := []types.PatchType{types.MergePatchType, types.JSONPatchType, types.StrategicMergePatchType}
	f.Fuzz(func(t *testing.T, patch []byte, which uint8) {
		out, err := applyPatch(patchTypes[int(which)%len(patchTypes)], current, patch, r)
		if err != nil {
			return
		}
		_, _, _ = decodeObject(r, out, fieldValidationStrict)
	})
}
