package apiserver

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInflightLimiterRefusesBeyondEachKindsLimit(t *testing.T) {
	l := newInflightLimiter(InflightLimits{ReadOnly: 2, Mutating: 1})

	r1, ok1 := l.acquire(kindReadOnly)
	r2, ok2 := l.acquire(kindReadOnly)
	if !ok1 || !ok2 {
		t.Fatalf("two reads under a limit of 2: %v, %v; want both admitted", ok1, ok2)
	}
	if _, ok := l.acquire(kindReadOnly); ok {
		t.Fatal("third read admitted over a limit of 2")
	}
	// A full read-only pool takes nothing from the mutating one.
	w1, ok := l.acquire(kindMutating)
	if !ok {
		t.Fatal("first write refused while only reads are full")
	}
	if _, ok := l.acquire(kindMutating); ok {
		t.Fatal("second write admitted over a limit of 1")
	}
	if got := testutil.ToFloat64(l.current.WithLabelValues(kindReadOnly)); got != 2 {
		t.Errorf("current readOnly = %v, want 2", got)
	}
	if got := testutil.ToFloat64(l.dropped.WithLabelValues(kindReadOnly)); got != 1 {
		t.Errorf("dropped readOnly = %v, want 1", got)
	}
	if got := testutil.ToFloat64(l.dropped.WithLabelValues(kindMutating)); got != 1 {
		t.Errorf("dropped mutating = %v, want 1", got)
	}

	r1()
	if _, ok := l.acquire(kindReadOnly); !ok {
		t.Error("read refused after a slot was given back")
	}
	r2()
	w1()
	if got := testutil.ToFloat64(l.current.WithLabelValues(kindMutating)); got != 0 {
		t.Errorf("current mutating = %v after release, want 0", got)
	}
}

func TestInflightLimiterZeroMeansNoLimit(t *testing.T) {
	l := newInflightLimiter(InflightLimits{})
	for i := range 1000 {
		if _, ok := l.acquire(kindMutating); !ok {
			t.Fatalf("write %d refused with no limit", i)
		}
	}
	if got := testutil.ToFloat64(l.current.WithLabelValues(kindMutating)); got != 1000 {
		t.Errorf("current mutating = %v, want 1000 counted even without a limit", got)
	}
}

func TestInflightKind(t *testing.T) {
	node := User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	control := User{Name: "system:plinth-control", Groups: []string{"system:masters"}}
	for _, tc := range []struct {
		method, url string
		user        User
		kind        string
		exempt      bool
	}{
		{"GET", "/api/v1/nodes/n1", node, kindReadOnly, false},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", node, kindReadOnly, false},
		{"GET", "/api/v1/pods?watch=true", node, "", true},
		{"GET", "/api/v1/pods?watch=1", node, "", true},
		{"GET", "/api/v1/pods?watch=false", node, kindReadOnly, false},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", node, kindMutating, false},
		{"PATCH", "/api/v1/nodes/n1/status", node, kindMutating, false},
		{"POST", "/api/v1/namespaces/default/events", node, kindMutating, false},
		{"DELETE", "/api/v1/namespaces/default/pods/p", node, kindMutating, false},
		// A POST with watch=true is not a watch.
		{"POST", "/api/v1/nodes?watch=true", node, kindMutating, false},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/plinth-control", control, "", true},
		{"GET", "/api/v1/nodes", control, "", true},
		{"GET", "/healthz", node, "", true},
		{"GET", "/readyz", User{}, "", true},
	} {
		kind, exempt := inflightKind(httptest.NewRequest(tc.method, tc.url, nil), tc.user)
		if kind != tc.kind || exempt != tc.exempt {
			t.Errorf("%s %s as %s: kind %q exempt %v, want %q %v", tc.method, tc.url, tc.user.Name, kind, exempt, tc.kind, tc.exempt)
		}
	}
}
