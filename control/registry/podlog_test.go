package registry_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/registry"
)

// recordingLogProxy answers every proxied log request with what it was asked.
type recordingLogProxy struct {
	mu   sync.Mutex
	last string
}

func (r *recordingLogProxy) ProxyContainerLogs(w http.ResponseWriter, _ *http.Request, node, ns, pod, container string, q url.Values) {
	r.mu.Lock()
	r.last = node + " " + ns + "/" + pod + "/" + container + "?" + q.Encode()
	r.mu.Unlock()
	_, _ = io.WriteString(w, "from "+node+"\n")
}

func TestPodLog(t *testing.T) {
	proxy := &recordingLogProxy{}
	api := newAPI(t, registry.Config{NodeLogs: proxy})
	ctx := context.Background()
	pods := api.client.CoreV1().Pods("default")
	one := testPod("one")
	one.Spec.NodeName = "n1"
	two := testPod("two")
	two.Spec.NodeName = "n1"
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
	unbound := testPod("unbound")
	for _, p := range []*corev1.Pod{one, two, unbound} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name, query string) (int, string) {
		t.Helper()
		resp, err := http.Get(api.url + "/api/v1/namespaces/default/pods/" + name + "/log" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("one", "?tailLines=3&follow=true&pretty=true"); code != 200 || body != "from n1\n" ||
		proxy.last != "n1 default/one/"+one.Spec.Containers[0].Name+"?follow=true&tailLines=3" {
		t.Errorf("one: %d %q, proxied %q", code, body, proxy.last)
	}
	for _, c := range []struct {
		pod, query string
		code       int
		want       string
	}{
		{"two", "", 400, "a container name must be specified for pod two, choose one of:"},
		{"two", "?container=nope", 400, "container nope is not valid for pod two"},
		{"unbound", "", 400, "does not have a host assigned"},
		{"one", "?insecureSkipTLSVerifyBackend=true", 400, "insecureSkipTLSVerifyBackend"},
		{"missing", "", 404, "not found"},
	} {
		if code, body := get(c.pod, c.query); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s%s: %d %s, want %d containing %q", c.pod, c.query, code, body, c.code, c.want)
		}
	}
	if code, body := get("two", "?container=side"); code != 200 || !strings.HasSuffix(proxy.last, "/two/side?") {
		t.Errorf("two -c side: %d %q, proxied %q", code, body, proxy.last)
	}

	// kubectl finds pods/log in discovery.
	res, err := api.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.APIResources {
		if r.Name == "pods/log" && r.Kind == "Pod" && len(r.Verbs) == 1 && r.Verbs[0] == "get" {
			found = true
		}
	}
	if !found {
		t.Error("discovery does not list pods/log with kind Pod and verb get")
	}
	if code, _ := get("one", "x"); code != 404 {
		t.Errorf("pods/logx: %d, want 404", code)
	}
}
