//go:build linux

package shutdown

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/shutdown/logindtest"
)

// recordingPods records which pods were stopped in which order, each stopping at once.
type recordingPods struct {
	pods  []*corev1.Pod
	mu    sync.Mutex
	calls chan termination
}

func (p *recordingPods) Active() []*corev1.Pod { return p.pods }

func (p *recordingPods) Terminate(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	p.calls <- termination{pod: pod.Name, grace: grace, ctx: ctx}
	return nil
}

// The real Manager and DBusLogind against a fake logind on a real dbus-daemon: the
// drop-in and reload, the lock, the pods stopped by band on PrepareForShutdown(true),
// the state file and metrics, the lock released; PrepareForShutdown(false) back to
// Ready with a new lock.
func TestManagerOverDBus(t *testing.T) {
	addr := logindtest.PrivateBus(t)
	fake := logindtest.NewLogind(t, addr, 5*time.Second)
	pods := &recordingPods{calls: make(chan termination, 10), pods: []*corev1.Pod{
		pod("critical", nil, "system-cluster-critical", 30),
		pod("batch", prio(-5), "", 2),
		pod("web", prio(1000), "", 30),
	}}
	stateFile := filepath.Join(t.TempDir(), StateFileName)
	reg := prometheus.NewRegistry()
	m, err := New(Config{
		Bands:         []Band{{0, 10 * time.Second}, {1000, 10 * time.Second}, {2000000000, 5 * time.Second}},
		StateFile:     stateFile,
		LogindConfDir: fake.ConfDir,
		Dial:          func(ctx context.Context) (Logind, error) { return DialLogind(ctx, addr) },
		Pods:          pods, Clock: clock.RealClock{}, Registerer: reg, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := within(t, done, "Run to return"); err != nil {
			t.Errorf("Run() = %v", err)
		}
	}()

	lock := within(t, fake.Inhibits, "Inhibit")
	if lock.What != "shutdown" || lock.Mode != "delay" || lock.Who != "plinthd" || lock.Why == "" {
		t.Errorf("Inhibit(%q, %q, %q, %q), want a delay lock on shutdown by plinthd", lock.What, lock.Who, lock.Why, lock.Mode)
	}
	// logind's 5s was too short for 25s: the drop-in, then SIGHUP through systemd.
	b, err := os.ReadFile(filepath.Join(fake.ConfDir, DropInName))
	if err != nil || !strings.Contains(string(b), "InhibitDelayMaxSec=25\n") {
		t.Errorf("drop-in %q (%v), want InhibitDelayMaxSec=25", b, err)
	}
	if kills := fake.Kills(); !slices.Equal(kills, []string{"systemd-logind.service main 1"}) {
		t.Errorf("KillUnit calls %v, want one SIGHUP to logind's main process", kills)
	}

	fake.PrepareForShutdown(true)
	var order []string
	for range 3 {
		c := within(t, pods.calls, "a pod stopped")
		order = append(order, fmt.Sprintf("%s/%v", c.pod, c.grace))
		if len(order) == 1 {
			// The lock was taken before any signal was handled: the client holds it.
			if n := lock.ClientCopies(t); n != 1 {
				t.Errorf("the client holds %d copies of the lock, want 1", n)
			}
			if !m.ShuttingDown() {
				t.Error("stopping pods while not shutting down")
			}
		}
	}
	if !slices.Equal(order, []string{"batch/2s", "web/10s", "critical/5s"}) {
		t.Errorf("stopped %v, want band 0 (batch, its own 2s), band 1000 (web, 10s), then critical (5s)", order)
	}
	lock.AwaitReleased(t, 10*time.Second)
	st, err := ReadState(stateFile)
	if err != nil || st.StartTime.IsZero() || st.EndTime.Before(st.StartTime) {
		t.Errorf("state file %+v (%v), want a start and an end after it", st, err)
	}
	if got := testutil.ToFloat64(m.metrics.end); got != unixSeconds(st.EndTime) || got == 0 {
		t.Errorf("plinth_graceful_shutdown_end_time_seconds = %v, want %v", got, unixSeconds(st.EndTime))
	}
	if n, err := testutil.GatherAndCount(reg, "plinth_graceful_shutdown_start_time_seconds", "plinth_graceful_shutdown_end_time_seconds"); err != nil || n != 2 {
		t.Errorf("registered gauges: %d (%v), want both", n, err)
	}
	if !m.ShuttingDown() {
		t.Error("not shutting down once the lock was released")
	}

	// Cancelled (say, `shutdown -c`): Ready again, and a new lock for the next one.
	fake.PrepareForShutdown(false)
	again := within(t, fake.Inhibits, "Inhibit again after the cancellation")
	if m.ShuttingDown() {
		t.Error("still shutting down after PrepareForShutdown(false)")
	}
	if again == lock || again.Mode != "delay" {
		t.Errorf("second lock %+v", again)
	}
}

// Only logind's own signals count: another client emitting PrepareForShutdown is
// ignored, since the match names logind's well-known name.
func TestDBusLogindIgnoresSignalsFromOthers(t *testing.T) {
	addr := logindtest.PrivateBus(t)
	fake := logindtest.NewLogind(t, addr, 30*time.Second)
	lg, err := DialLogind(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if d, err := lg.InhibitDelayMax(context.Background()); err != nil || d != 30*time.Second {
		t.Fatalf("InhibitDelayMax() = %v, %v; want 30s", d, err)
	}
	impostor := logindtest.Dial(t, addr)
	if err := impostor.Emit(logindPath, logindInterface+".PrepareForShutdown", true); err != nil {
		t.Fatal(err)
	}
	fake.PrepareForShutdown(false)
	if got := within(t, lg.PrepareForShutdown(), "a PrepareForShutdown"); got != false {
		t.Error("the impostor's PrepareForShutdown(true) was delivered")
	}
}

// A bus without logind (a container without systemd) is logind unavailable, not a
// logind that never speaks.
func TestDialLogindFailsWithoutLogind(t *testing.T) {
	addr := logindtest.PrivateBus(t)
	lg, err := DialLogind(context.Background(), addr)
	if err == nil {
		lg.Close()
		t.Fatal("DialLogind succeeded on a bus without logind")
	}
	if !strings.Contains(err.Error(), "InhibitDelayMaxUSec") {
		t.Errorf("error %v does not say what failed", err)
	}
}

func TestDialLogindFailsWithoutABus(t *testing.T) {
	_, err := DialLogind(context.Background(), "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	if err == nil {
		t.Fatal("DialLogind succeeded without a bus")
	}
}
