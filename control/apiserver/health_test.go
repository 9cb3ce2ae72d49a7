package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

// nobody recognises no credentials, as the control service's authenticators do for a
// request that brings none.
type nobody struct{}

func (nobody) Authenticate(*http.Request) (apiserver.User, bool, error) {
	return apiserver.User{}, false, nil
}

// healthServer serves the API over an embedded etcd the test may stop, to every
// request without credentials.
func healthServer(t *testing.T, clk clock.PassiveClock) (api *apiserver.Server, stopEtcd func(), url string, metrics *prometheus.Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(etcd.Close) })
	reg, err := apiserver.NewRegistry(registry.All()...)
	if err != nil {
		t.Fatal(err)
	}
	metrics = prometheus.NewRegistry()
	api, err = apiserver.New(apiserver.Config{Store: storage.New(etcd.Client, "/registry"), Registry: reg,
		Authenticators: []apiserver.Authenticator{nobody{}}, Metrics: metrics, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api)
	t.Cleanup(hs.Close)
	return api, func() { once.Do(etcd.Close) }, hs.URL, metrics
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthEndpoints(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	api, stopEtcd, url, metrics := healthServer(t, clk)

	// Healthy, and open to anyone without credentials, as load balancers probe.
	for _, path := range []string{"/livez", "/readyz", "/healthz", "/readyz/etcd", "/livez/ping"} {
		if code, body := get(t, url+path); code != 200 || body != "ok" {
			t.Errorf("GET %s = %d %q, want 200 ok", path, code, body)
		}
	}
	if code, body := get(t, url+"/readyz?verbose"); code != 200 || body != "[+]ping ok\n[+]etcd ok\n[+]shutdown ok\nreadyz check passed\n" {
		t.Errorf("GET /readyz?verbose = %d %q", code, body)
	}
	if code, body := get(t, url+"/livez?verbose"); code != 200 || body != "[+]ping ok\nlivez check passed\n" {
		t.Errorf("GET /livez?verbose = %d %q; etcd is not a liveness check", code, body)
	}
	if code, _ := get(t, url+"/readyz/nosuch"); code != 404 {
		t.Errorf("GET /readyz/nosuch = %d, want 404", code)
	}
	if code, _ := get(t, url+"/api/v1/nodes"); code != 401 {
		t.Errorf("GET /api/v1/nodes without credentials = %d, want 401: only health is public", code)
	}
	if code, _ := get(t, url+"/version"); code != 401 {
		t.Errorf("GET /version without credentials = %d, want 401: only health is public", code)
	}

	// etcd gone: not ready, still alive (restarting would not bring etcd back).
	stopEtcd()
	if code, _ := get(t, url+"/readyz"); code != 200 {
		t.Errorf("GET /readyz within a second of a passing etcd check = %d, want the shared result, 200", code)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	code, body := get(t, url+"/readyz")
	if code != 500 || !strings.Contains(body, "[-]etcd failed: reason withheld\n") || !strings.HasSuffix(body, "readyz check failed\n") {
		t.Errorf("GET /readyz with etcd stopped = %d %q, want 500 naming etcd", code, body)
	}
	if code, _ := get(t, url+"/readyz/etcd"); code != 500 {
		t.Errorf("GET /readyz/etcd with etcd stopped = %d, want 500", code)
	}
	if code, body := get(t, url+"/readyz?exclude=etcd"); code != 200 || body != "ok" {
		t.Errorf("GET /readyz?exclude=etcd = %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, url+"/livez"); code != 200 || body != "ok" {
		t.Errorf("GET /livez with etcd stopped = %d %q, want 200 ok", code, body)
	}
	if v := gauge(t, metrics, "plinth_apiserver_healthcheck", "etcd", "readyz"); v != 0 {
		t.Errorf("plinth_apiserver_healthcheck{name=etcd,type=readyz} = %v with etcd stopped, want 0", v)
	}
	if v := gauge(t, metrics, "plinth_apiserver_healthcheck", "ping", "livez"); v != 1 {
		t.Errorf("plinth_apiserver_healthcheck{name=ping,type=livez} = %v, want 1", v)
	}

	// Shutting down: not ready, so load balancers drain the replica.
	api.BeginShutdown()
	if code, body := get(t, url+"/readyz?exclude=etcd"); code != 500 || !strings.Contains(body, "[-]shutdown failed") {
		t.Errorf("GET /readyz while shutting down = %d %q, want 500 naming shutdown", code, body)
	}
}

// gauge reads one series of a gauge vector labelled name and type.
func gauge(t *testing.T, reg *prometheus.Registry, metric, name, typ string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == name && labels["type"] == typ {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("%s{name=%q,type=%q} not exported", metric, name, typ)
	return 0
}
