package node

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"log/slog"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

func TestNodeName(t *testing.T) {
	got, err := NodeName("  Worker-1.Example.COM ")
	if err != nil || got != "worker-1.example.com" {
		t.Errorf("NodeName(override) = %q, %v; want worker-1.example.com", got, err)
	}
	if _, err := NodeName("bad_name"); err == nil || !strings.Contains(err.Error(), `hostnameOverride "bad_name"`) {
		t.Errorf("NodeName(bad_name) error = %v, want one naming the source and value", err)
	}
	h, err := os.Hostname()
	if err != nil {
		t.Fatalf("os.Hostname: %v", err)
	}
	got, err = NodeName("")
	if err != nil || got != strings.ToLower(h) {
		t.Errorf("NodeName(\"\") = %q, %v; want the lowercased hostname %q", got, err, strings.ToLower(h))
	}
}

func TestNewAgentDefaultsAndValidation(t *testing.T) {
	var clk clock.WithTicker = testingclock.NewFakeClock(t0)
	logger := slog.New(slog.DiscardHandler)
	a, err := NewAgent(nodeclienttest.FromClientset(fake.NewClientset()), Config{NodeName: "n1"}, HostFacts{}, nil, clk, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.LeaseDuration != 40*time.Second || a.renewInterval != 10*time.Second || a.cfg.StatusUpdateFrequency != 10*time.Second ||
		a.cfg.StatusReportFrequency != 5*time.Minute || a.cfg.MaxPods != 110 {
		t.Errorf("defaults not applied: %+v renew %s", a.cfg, a.renewInterval)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{NodeName: "Bad_Name"}, `NodeName "Bad_Name"`},
		{Config{NodeName: "n", LeaseDuration: 1500 * time.Millisecond}, "LeaseDuration 1.5s"},
		{Config{NodeName: "n", MaxPods: -1}, "MaxPods -1"},
		{Config{NodeName: "n", KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}, "KubeReserved[cpu] -1"},
	}
	for _, b := range bad {
		if _, err := NewAgent(nodeclienttest.FromClientset(fake.NewClientset()), b.cfg, HostFacts{}, nil, clk, nil, logger); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("NewAgent(%+v) error = %v, want it to contain %q", b.cfg, err, b.want)
		}
	}
}

func TestResourceListFromStrings(t *testing.T) {
	rl, err := ResourceListFromStrings("systemReserved", map[string]string{"cpu": "500m", "memory": "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if q := rl[corev1.ResourceMemory]; q.Value() != 1<<30 {
		t.Errorf("memory = %s, want 1Gi", q.String())
	}
	if _, err := ResourceListFromStrings("kubeReserved", map[string]string{"memory": "lots"}); err == nil || !strings.Contains(err.Error(), `kubeReserved[memory]: "lots" is not a quantity`) {
		t.Errorf("error = %v, want one naming the field and value", err)
	}
	if _, err := ResourceListFromStrings("kubeReserved", map[string]string{"cpu": "-1"}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("error = %v, want a negative-quantity error", err)
	}
}

func TestNodeAllocatableNeverNegative(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("2")}
	got := nodeAllocatable(capacity,
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")},
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi"), corev1.ResourceCPU: resource.MustParse("250m")},
	)
	if q := got[corev1.ResourceMemory]; q.Sign() != 0 {
		t.Errorf("memory allocatable = %s, want 0 when reservations exceed capacity", q.String())
	}
	if q := got[corev1.ResourceCPU]; q.MilliValue() != 1750 {
		t.Errorf("cpu allocatable = %s, want 1750m", q.String())
	}
	if q := capacity[corev1.ResourceCPU]; q.MilliValue() != 2000 {
		t.Errorf("capacity modified to %s", q.String())
	}
}

func FuzzResourceListFromStrings(f *testing.F) {
	for _, s := range []string{"500m", "1Gi", "-1", "lots", "1e3", "0", "9223372036854775807Ei", ""} {
		f.Add("memory", s)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		rl, err := ResourceListFromStrings("systemReserved", map[string]string{name: value})
		if err != nil {
			if !strings.Contains(err.Error(), "systemReserved[") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if q := rl[corev1.ResourceName(name)]; q.Sign() < 0 {
			t.Fatalf("accepted negative quantity %q", value)
		}
	})
}
