package plinthd

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/sysinfo"
)

type emptySource struct{}

func (emptySource) Observe(context.Context) (pressure.Observations, error) {
	return pressure.Observations{}, nil
}

func TestPressureAliveFailsWhenEvaluationStops(t *testing.T) {
	m, err := pressure.NewManager(pressure.DefaultConfig(), pressure.Deps{Source: emptySource{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	p := &pressureSubsystem{manager: m, interval: time.Second, clock: clk, created: start}
	if err := p.alive(); err != nil {
		t.Fatalf("alive right after start = %v", err)
	}
	clk.SetTime(start.Add(3*time.Second + pressureStallBound - time.Millisecond))
	if err := p.alive(); err != nil {
		t.Fatalf("alive within the bound = %v", err)
	}
	clk.SetTime(start.Add(3*time.Second + pressureStallBound + time.Second))
	if err := p.alive(); err == nil || !strings.Contains(err.Error(), "no pressure evaluation") {
		t.Fatalf("alive with no evaluation past the bound = %v, want an error saying so", err)
	}
}

func TestAllocatableMemorySubtractsReservations(t *testing.T) {
	mi, err := sysinfo.Host{}.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	if got, err := allocatableMemory(cfg); err != nil || got != 0 {
		t.Fatalf("without a pods cgroup = %d, %v; want 0 (not needed)", got, err)
	}
	cfg.PodsCgroup = "/plinth-pods"
	cfg.SystemReserved = map[string]string{"memory": "100Mi", "cpu": "1"}
	cfg.KubeReserved = map[string]string{"memory": "28Mi"}
	got, err := allocatableMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := mi.MemTotal - 128<<20; got != want {
		t.Errorf("allocatable = %d, want MemTotal %d minus 128Mi = %d", got, mi.MemTotal, want)
	}
	cfg.KubeReserved = map[string]string{"memory": "1Pi"}
	if got, err := allocatableMemory(cfg); err != nil || got != 1 {
		t.Errorf("with everything reserved = %d, %v; want 1 byte, so any pod use is pressure", got, err)
	}
}
