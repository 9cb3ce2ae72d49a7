package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	testingclock "k8s.io/utils/clock/testing"
)

func TestHealthStateTimeout(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	h := newHealthState(c, time.Minute)
	if ok, _, _ := h.healthy(); !ok {
		t.Fatal("unhealthy with nothing queued")
	}
	h.queued()
	c.Step(59 * time.Second)
	if ok, _, _ := h.healthy(); !ok {
		t.Fatal("unhealthy 59 s after a change with a 60 s timeout")
	}
	c.Step(time.Second)
	if ok, _, _ := h.healthy(); ok {
		t.Fatal("healthy 60 s after a change was queued and not applied")
	}
	if err := h.check(); err == nil {
		t.Fatal("plinthd check passes while /livez would fail")
	}
	// A sync takes the change; another arrives during it and is not applied by it.
	h.syncStarted()
	c.Step(time.Second)
	h.queued()
	h.synced()
	if ok, last, _ := h.healthy(); !ok || !last.Equal(t0.Add(61*time.Second)) {
		t.Fatalf("after the sync: healthy %v, lastUpdated %v", ok, last)
	}
	c.Step(time.Minute)
	if ok, _, _ := h.healthy(); ok {
		t.Fatal("the change queued during the sync was treated as applied")
	}
	h.syncStarted()
	h.synced()
	c.Step(time.Hour)
	if ok, _, _ := h.healthy(); !ok || h.check() != nil {
		t.Fatal("unhealthy an hour after everything was applied with nothing queued")
	}
}

func TestHealthHandler(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	state := newHealthState(c, time.Minute)
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	deleting := false
	mux := healthHandler{state: state, nodeDeleting: func() bool { return deleting }, metrics: m}.mux()
	get := func(path string) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s Content-Type %q", path, ct)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s body %q: %v", path, rec.Body.String(), err)
		}
		return rec.Code, body
	}

	state.syncStarted()
	state.synced()
	code, body := get("/healthz")
	if code != 200 || body["nodeEligible"] != true || body["lastUpdated"] != "2026-01-01T00:00:00Z" || body["currentTime"] != "2026-01-01T00:00:00Z" {
		t.Fatalf("/healthz = %d %v", code, body)
	}
	if code, body := get("/livez"); code != 200 || body["nodeEligible"] != nil {
		t.Fatalf("/livez = %d %v (no nodeEligible)", code, body)
	}

	// The node is being deleted: /healthz fails, /livez does not.
	deleting = true
	if code, body := get("/healthz"); code != 503 || body["nodeEligible"] != false {
		t.Fatalf("/healthz while deleting = %d %v", code, body)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Fatalf("/livez while deleting = %d", code)
	}

	// A change not applied for 2 × syncPeriod fails both.
	deleting = false
	state.queued()
	c.Step(2 * time.Minute)
	if code, body := get("/healthz"); code != 503 || body["nodeEligible"] != true || body["currentTime"] != "2026-01-01T00:02:00Z" {
		t.Fatalf("/healthz stale = %d %v", code, body)
	}
	if code, _ := get("/livez"); code != 503 {
		t.Fatalf("/livez stale = %d", code)
	}

	for _, tc := range []struct {
		name string
		code string
		want float64
	}{
		{"plinth_proxy_proxy_healthz_total", "200", 1}, {"plinth_proxy_proxy_healthz_total", "503", 2},
		{"plinth_proxy_proxy_livez_total", "200", 2}, {"plinth_proxy_proxy_livez_total", "503", 1},
	} {
		if got := metricValue(t, reg, tc.name, map[string]string{"code": tc.code}); got != tc.want {
			t.Errorf("%s{code=%s} = %v, want %v", tc.name, tc.code, got, tc.want)
		}
	}
}
