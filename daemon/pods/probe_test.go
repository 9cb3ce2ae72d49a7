package pods

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestProbeTrackerTimingAndThresholds(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	p := &corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, FailureThreshold: 2, SuccessThreshold: 2}
	r := NewProbeTracker(ReadinessProbe, p, clk.Now())
	if r.Verdict() || !r.Next().Equal(t0.Add(5*time.Second)) {
		t.Fatalf("readiness starts %v, next %v; want failed, after the initial delay", r.Verdict(), r.Next())
	}
	clk.Step(5 * time.Second)
	if v, changed := r.Record(true, clk.Now()); v || changed {
		t.Errorf("one success of two: verdict %v", v)
	}
	if !r.Next().Equal(clk.Now().Add(2 * time.Second)) {
		t.Errorf("next = %v, want one period later", r.Next())
	}
	clk.Step(2 * time.Second)
	if v, changed := r.Record(true, clk.Now()); !v || !changed {
		t.Errorf("second success: verdict %v changed %v", v, changed)
	}
	r.Record(false, clk.Now())
	if !r.Verdict() {
		t.Error("one failure below the threshold turned readiness off")
	}
	if v, changed := r.Record(false, clk.Now()); v || !changed {
		t.Errorf("second failure: verdict %v changed %v", v, changed)
	}
	if r.Failed() {
		t.Error("a readiness probe never asks for a restart")
	}

	l := NewProbeTracker(LivenessProbe, &corev1.Probe{SuccessThreshold: 5}, t0)
	if !l.Verdict() || !l.Next().Equal(t0) {
		t.Errorf("liveness starts %v at %v", l.Verdict(), l.Next())
	}
	for range 2 {
		l.Record(false, t0)
	}
	if l.Failed() {
		t.Error("liveness failed after 2 of 3 failures")
	}
	l.Record(false, t0)
	if !l.Failed() || l.Verdict() {
		t.Error("liveness did not fail after 3 failures (the default threshold)")
	}

	s := NewProbeTracker(StartupProbe, &corev1.Probe{}, t0)
	if s.Verdict() {
		t.Error("startup starts passed")
	}
	if v, _ := s.Record(true, t0); !v || !s.Next().IsZero() {
		t.Errorf("startup after a success: %v, next %v; want started and no more probes", v, s.Next())
	}
}

type fakeExec struct {
	code int
	out  string
	args []string
}

func (f *fakeExec) Exec(_ context.Context, _ string, args []string) ([]byte, int, error) {
	f.args = args
	return []byte(f.out), f.code, nil
}

func TestProberHandlers(t *testing.T) {
	ctx := context.Background()
	fe := &fakeExec{code: 1, out: "nope"}
	pr := Prober{Exec: fe, UserAgent: "kube-probe/1.33"}
	ok, out, err := pr.Run(ctx, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/ready"}}}}, ProbeTarget{ContainerID: "c1"})
	if ok || out != "nope" || err != nil || strings.Join(fe.args, " ") != "cat /ready" {
		t.Errorf("exec probe: %v %q %v (args %q)", ok, out, err, fe.args)
	}

	var gotUA, gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHost = r.UserAgent(), r.Host
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	c := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	httpProbe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "Host", Value: "example.test"}}}}}
	}
	tgt := ProbeTarget{Container: c, PodIP: host}
	for path, want := range map[string]bool{"/healthz": true, "/moved": true, "/down": false} {
		ok, out, err := pr.Run(ctx, httpProbe(path), tgt)
		if ok != want || err != nil {
			t.Errorf("HTTP probe %s: %v %q %v, want %v", path, ok, out, err, want)
		}
	}
	if gotUA != "kube-probe/1.33" || gotHost != "example.test" {
		t.Errorf("HTTP probe sent User-Agent %q Host %q", gotUA, gotHost)
	}
	if _, _, err := pr.Run(ctx, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("nope")}}}, tgt); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown port name: %v", err)
	}

	tcp := func(p int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(p))}}}
	}
	if ok, _, err := pr.Run(ctx, tcp(port), tgt); !ok || err != nil {
		t.Errorf("TCP probe of a listening port: %v %v", ok, err)
	}
	srv.Close()
	if ok, _, err := pr.Run(ctx, tcp(port), tgt); ok || err != nil {
		t.Errorf("TCP probe of a closed port: %v %v", ok, err)
	}
}
