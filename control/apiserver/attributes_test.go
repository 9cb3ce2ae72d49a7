package apiserver

import (
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A list or watch limited to one name by metadata.name=NAME is authorized as a request
// about that object; any other selector leaves the name empty.
func TestListAndWatchNameFromFieldSelector(t *testing.T) {
	r := &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "secrets", Kind: "Secret", Namespaced: true,
		New: func() runtime.Object { return &corev1.Secret{} }}
	for _, tc := range []struct {
		url, verb, name string
	}{
		{"/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dpull", "list", "pull"},
		{"/api/v1/namespaces/default/secrets?watch=true&fieldSelector=metadata.name%3D%3Dpull", "watch", "pull"},
		{"/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dpull,type%3DOpaque", "list", "pull"},
		{"/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%21%3Dpull", "list", ""},
		{"/api/v1/namespaces/default/secrets?fieldSelector=type%3DOpaque", "list", ""},
		{"/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3D..", "list", ""},
		{"/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Da%2Fb", "list", ""},
		{"/api/v1/namespaces/default/secrets?fieldSelector=%28%28", "list", ""},
		{"/api/v1/namespaces/default/secrets/real?fieldSelector=metadata.name%3Dother", "get", "real"},
	} {
		req := httptest.NewRequest("GET", tc.url, nil)
		info, ok := parseResourcePath(req.URL.Path)
		if !ok {
			t.Fatalf("%s: not a resource path", tc.url)
		}
		a := resourceAttributes(req, r, info)
		if a.Verb != tc.verb || a.Name != tc.name {
			t.Errorf("%s: verb %q name %q, want %q %q", tc.url, a.Verb, a.Name, tc.verb, tc.name)
		}
	}
}
