package auth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/auth"
)

// testNodeHeader names the node a test request comes from; without it the request is
// an administrator's.
const testNodeHeader = "X-Plinth-Test-Node"

type headerAuthenticator struct{}

func (headerAuthenticator) Authenticate(req *http.Request) (apiserver.User, bool, error) {
	if node := req.Header.Get(testNodeHeader); node != "" {
		return apiserver.User{Name: "system:node:" + node, Groups: []string{"system:nodes", "system:authenticated"}}, true, nil
	}
	return apiserver.User{Name: "test-admin", Groups: []string{"system:masters"}}, true, nil
}

func nodeClient(t *testing.T, s *apitest.Server, node string) kubernetes.Interface {
	t.Helper()
	cfg := s.RESTConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set(testNodeHeader, node)
			return rt.RoundTrip(req)
		})
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestNodeSecretAccessThroughTheAPI runs the node authorizer in the real API server
// over etcd, wired as the control service wires it.
func TestNodeSecretAccessThroughTheAPI(t *testing.T) {
	authz := &auth.Authorizer{}
	s := apitest.Start(t, apitest.Options{
		Authenticators: []apiserver.Authenticator{headerAuthenticator{}},
		Authorizer:     authz,
		Bind: func(api *apiserver.Server, reg *apiserver.Registry) {
			pods, _ := reg.Lookup(schema.GroupVersion{Version: "v1"}, "pods")
			authz.Pods = auth.ObjectsNodePods(api.Objects(pods))
		},
	})
	ctx := context.Background()
	admin := s.Client
	for _, name := range []string{"pull-a", "pull-b"} {
		if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": name},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, node, secret string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			NodeName:         node,
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: secret}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}},
		}}
	}
	for _, p := range []*corev1.Pod{pod("on-a", "node-a", "pull-a"), pod("on-b", "node-b", "pull-b")} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	nodeA := nodeClient(t, s, "node-a").CoreV1()
	if got, err := nodeA.Secrets("default").Get(ctx, "pull-a", metav1.GetOptions{}); err != nil || string(got.Data["k"]) != "pull-a" {
		t.Fatalf("node A gets its pod's pull secret: %v", err)
	}
	if _, err := nodeA.ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("node A gets its pod's configmap: %v", err)
	}
	if _, err := nodeA.Secrets("default").Get(ctx, "pull-b", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A gets node B's pod's secret: %v, want Forbidden", err)
	}
	if _, err := nodeA.Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A lists all secrets: %v, want Forbidden", err)
	}
	one := metav1.ListOptions{FieldSelector: "metadata.name=pull-a"}
	list, err := nodeA.Secrets("default").List(ctx, one)
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("node A lists its pull secret by name: %v %v", list, err)
	}
	one.ResourceVersion = list.ResourceVersion
	if _, err := nodeA.Secrets("default").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=pull-b"}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A lists node B's secret by name: %v, want Forbidden", err)
	}
	w, err := nodeA.Secrets("default").Watch(ctx, one)
	if err != nil {
		t.Fatalf("node A watches its pull secret by name: %v", err)
	}
	defer w.Stop()
	if _, err := admin.CoreV1().Secrets("default").Update(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-a"}, StringData: map[string]string{"k": "rotated"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if s, ok := ev.Object.(*corev1.Secret); ev.Type != watch.Modified || !ok || string(s.Data["k"]) != "rotated" {
			t.Fatalf("watch event %v %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the rotated secret")
	}
	if err := nodeA.Secrets("default").Delete(ctx, "pull-a", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A deletes a secret it may read: %v, want Forbidden", err)
	}
	if _, err := nodeA.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A creates a secret: %v, want Forbidden", err)
	}

	// Binding a pod that uses pull-b to node A grants it at the next request; deleting
	// the pod takes it away at the next request. No waiting: the pods are read live.
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("second-on-a", "node-a", "pull-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeA.Secrets("default").Get(ctx, "pull-b", metav1.GetOptions{}); err != nil {
		t.Fatalf("node A gets the secret of its newly bound pod: %v", err)
	}
	zero := int64(0)
	for _, name := range []string{"on-a", "second-on-a"} {
		if err := admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"pull-a", "pull-b"} {
		if _, err := nodeA.Secrets("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("node A gets %s after its pods are gone: %v, want Forbidden", name, err)
		}
	}
	if _, err := nodeA.ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node A gets the configmap after its pods are gone: %v, want Forbidden", err)
	}
}

// TestPodIndexThroughTheAPI runs the authorizer as the control service does: the pod
// cache first, live pods when it finds none. A new binding counts at once; a deleted
// pod's access ends once the cache sees the deletion, which must take well under the
// generous bound here.
func TestPodIndexThroughTheAPI(t *testing.T) {
	authz := &auth.Authorizer{}
	s := apitest.Start(t, apitest.Options{
		Authenticators: []apiserver.Authenticator{headerAuthenticator{}},
		Authorizer:     authz,
		Bind: func(api *apiserver.Server, reg *apiserver.Registry) {
			pods, _ := reg.Lookup(schema.GroupVersion{Version: "v1"}, "pods")
			authz.LivePods = auth.ObjectsNodePods(api.Objects(pods))
		},
	})
	index, err := auth.NewPodIndex(s.Client)
	if err != nil {
		t.Fatal(err)
	}
	authz.Pods = index // before any node request: the server reads it from here on
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); index.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	admin := s.Client
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"}, StringData: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		NodeName: "node-a", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodeA := nodeClient(t, s, "node-a").CoreV1()
	if _, err := nodeA.Secrets("default").Get(ctx, "pull", metav1.GetOptions{}); err != nil {
		t.Fatalf("node A gets the secret of its pod right after binding: %v", err)
	}

	// Once the cache holds the pod, the cache alone grants the read.
	waitFor(t, 10*time.Second, "the pod in the cache", func() bool {
		pods, _ := index.PodsOnNode(ctx, "default", "node-a")
		return len(pods) == 1
	})
	cacheOnly := auth.Authorizer{Pods: index}
	a := apiserver.Attributes{User: apiserver.User{Name: "system:node:node-a", Groups: []string{"system:nodes"}},
		Verb: "get", Resource: "secrets", Namespace: "default", Name: "pull"}
	if ok, reason := cacheOnly.Authorize(ctx, a); !ok {
		t.Fatalf("the cache alone refuses: %s", reason)
	}

	zero := int64(0)
	if err := admin.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "node A refused the secret of its deleted pod", func() bool {
		_, err := nodeA.Secrets("default").Get(ctx, "pull", metav1.GetOptions{})
		return apierrors.IsForbidden(err)
	})
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
