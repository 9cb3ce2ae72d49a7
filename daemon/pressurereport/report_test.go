package pressurereport

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
)

type fixedSource pressure.Observations

func (f fixedSource) Observe(context.Context) (pressure.Observations, error) {
	return pressure.Observations(f), nil
}

// evaluatedManager runs a manager over obs until its first evaluation.
func evaluatedManager(t *testing.T, spec pressure.ThresholdSpec, obs pressure.Observations) *pressure.Manager {
	t.Helper()
	cfg := pressure.DefaultConfig()
	th, err := pressure.ParseThresholds(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Thresholds = th
	m, err := pressure.NewManager(cfg, pressure.Deps{Source: fixedSource(obs), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for !m.Snapshot().Evaluated {
		if time.Now().After(deadline) {
			t.Fatal("no evaluation")
		}
		time.Sleep(time.Millisecond)
	}
	return m
}

func TestReportServedFetchedAndPrinted(t *testing.T) {
	obs := pressure.Observations{
		Memory:            &pressure.MemoryStats{CapacityBytes: 8 << 30, MemAvailableBytes: 6 << 30, HasMemAvailable: true},
		AllocatableMemory: &pressure.AllocatableMemoryStats{AllocatableBytes: 512 << 20, WorkingSetBytes: 450 << 20},
		Nodefs:            &pressure.FilesystemStats{CapacityBytes: 100 << 30, AvailableBytes: 50 << 30, Inodes: 1000, InodesFree: 900},
		PIDs:              &pressure.PIDStats{PIDMax: 32768, ThreadsMax: 100000, Tasks: 200},
		Feeds: []pressure.Feed{
			{Name: "meminfo", Conditions: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, Active: true},
			{Name: "ebpf-oom", Conditions: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, Detail: "oomwatch: no BTF"},
		},
	}
	m := evaluatedManager(t, pressure.ThresholdSpec{
		Hard:            map[string]string{"memory.available": "100Mi", "allocatableMemory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "15%"},
		Soft:            map[string]string{"pid.available": "10%"},
		SoftGracePeriod: map[string]time.Duration{"pid.available": time.Minute},
	}, obs)
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}

	r, err := Fetch(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Evaluated || r.Trigger != "start" {
		t.Errorf("evaluated %t trigger %q, want the start evaluation", r.Evaluated, r.Trigger)
	}
	var alloc *Threshold
	for i := range r.Thresholds {
		if r.Thresholds[i].Signal == "allocatableMemory.available" {
			alloc = &r.Thresholds[i]
		}
	}
	if alloc == nil || !alloc.Crossed || alloc.Target != 100<<20 || alloc.Since == nil {
		t.Fatalf("allocatableMemory threshold = %+v, want crossed with target 100Mi", alloc)
	}

	var out bytes.Buffer
	if err := Print(&out, r, r.At.Add(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"1.5s ago, trigger start",
		"allocatableMemory.available  62Mi",
		"<100Mi hard",
		"YES",
		"nodefs.available",
		"<10% (10Gi) hard",
		"pid.available",
		"<10% (3276) soft grace 1m0s",
		"imagefs.available            unobserved",
		"ebpf-oom  inactive: oomwatch: no BTF",
		"MemoryPressure  True",
		"PlinthdHasInsufficientMemory",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("printed report lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "YES") != 1 {
		t.Errorf("want exactly one crossed threshold:\n%s", text)
	}
}

func TestFetchNamesMissingEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Fetch(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Fetch from a server without /pressure = %v, want an error naming the 404", err)
	}
}

func TestAmount(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    int64
		want string
	}{
		{"bytes", 100 << 20, "100Mi"},
		{"bytes", 1536 << 20, "1.5Gi"},
		{"bytes", -(62 << 20), "-62Mi"},
		{"bytes", 512, "512"},
		{"pids", 32613, "32613"},
	} {
		if got := amount(tc.unit, tc.v); got != tc.want {
			t.Errorf("amount(%s, %d) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}
