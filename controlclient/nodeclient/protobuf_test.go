package nodeclient_test

import (
	"mime"
	"net/http"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/controlclient/nodeclient"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The client sends and asks for protobuf, as kubelet does, and the API answers in it:
// objects, lists and watch streams.
func TestProtobufOnTheWire(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	cfg := s.RESTConfig()
	var mu sync.Mutex
	seen := map[string][2]string{} // request -> request and response media types
	cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err == nil {
				sent, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				got, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				if params["stream"] != "" {
					got += ";stream=" + params["stream"]
				}
				mu.Lock()
				seen[r.Method+" "+r.URL.Path+" watch="+r.URL.Query().Get("watch")] = [2]string{sent, got}
				mu.Unlock()
			}
			return resp, err
		})
	}
	c, err := nodeclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if _, err := c.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil || got.Name != "node-a" {
		t.Fatalf("Get: %v, %v", got, err)
	}
	list, err := c.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
	w, err := c.Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()

	const pb = "application/vnd.kubernetes.protobuf"
	mu.Lock()
	defer mu.Unlock()
	for request, want := range map[string][2]string{
		"POST /api/v1/nodes watch=":       {pb, pb},
		"GET /api/v1/nodes/node-a watch=": {"", pb},
		"GET /api/v1/nodes watch=":        {"", pb},
		"GET /api/v1/nodes watch=true":    {"", pb + ";stream=watch"},
	} {
		if seen[request] != want {
			t.Errorf("%s: sent %q, received %q; want %q and %q", request, seen[request][0], seen[request][1], want[0], want[1])
		}
	}
}
