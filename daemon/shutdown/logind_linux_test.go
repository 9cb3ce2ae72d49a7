//go:build linux

package shutdown

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/internal/kerneltest"
)

// privateBus starts a dbus-daemon of its own for the test and returns its address; it
// is stopped when the test ends.
func privateBus(t *testing.T) string {
	t.Helper()
	kerneltest.Require(t, kerneltest.DBusDaemon)
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
	// A bus on which anyone may own any name and send anything: the test plays both
	// logind and its client.
	err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address")
	cmd.Stderr = testWriter{t} // stopped in Cleanup, before the test ends
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The address is printed once the bus listens.
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}

// busLogind is a fake systemd-logind (and the one systemd method plinthd calls) on a
// real bus: Inhibit hands out the write end of a pipe, as logind hands out a FIFO's;
// InhibitDelayMaxUSec is a property; KillUnit(systemd-logind.service, SIGHUP) rereads
// the drop-ins from confDir as logind's SIGHUP handler does.
type busLogind struct {
	t       *testing.T
	conn    *dbus.Conn
	props   *prop.Properties
	confDir string

	mu      sync.Mutex
	locks   []*busLock
	kills   []string
	inhibit chan *busLock
}

// busLock is one lock handed out: the fake's two pipe ends and what was asked.
type busLock struct {
	r, w                 *os.File
	what, who, why, mode string
}

type loginManager struct{ f *busLogind }

func (m loginManager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	fd := dbus.UnixFD(w.Fd()) // before the test may see (and close) it
	l := &busLock{r: r, w: w, what: what, who: who, why: why, mode: mode}
	m.f.mu.Lock()
	m.f.locks = append(m.f.locks, l)
	m.f.mu.Unlock()
	m.f.inhibit <- l
	return fd, nil
}

type systemdManager struct{ f *busLogind }

func (m systemdManager) KillUnit(unit, who string, signal int32) *dbus.Error {
	m.f.mu.Lock()
	m.f.kills = append(m.f.kills, fmt.Sprintf("%s %s %d", unit, who, signal))
	m.f.mu.Unlock()
	if unit != "systemd-logind.service" || signal != int32(syscall.SIGHUP) {
		return nil
	}
	d, err := readInhibitDelayMaxSec(m.f.confDir)
	if err != nil {
		return dbus.MakeFailedError(err)
	}
	if d > 0 {
		m.f.props.SetMust(logindInterface, "InhibitDelayMaxUSec", uint64(d/time.Microsecond))
	}
	return nil
}

func newBusLogind(t *testing.T, addr string, delayMax time.Duration) *busLogind {
	t.Helper()
	conn, err := dbus.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatal(err)
	}
	f := &busLogind{t: t, conn: conn, confDir: filepath.Join(t.TempDir(), "logind.conf.d"), inhibit: make(chan *busLock, 10)}
	if err := conn.Export(loginManager{f}, logindPath, logindInterface); err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(systemdManager{f}, systemdPath, "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	f.props, err = prop.Export(conn, logindPath, prop.Map{logindInterface: {
		"InhibitDelayMaxUSec": {Value: uint64(delayMax / time.Microsecond), Emit: prop.EmitFalse},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{logindName, systemdName} {
		if reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("owning %s: %v %v", name, reply, err)
		}
	}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, l := range f.locks {
			l.r.Close()
			l.w.Close()
		}
	})
	return f
}

func (f *busLogind) prepareForShutdown(active bool) {
	f.t.Helper()
	if err := f.conn.Emit(logindPath, logindInterface+".PrepareForShutdown", active); err != nil {
		f.t.Fatal(err)
	}
}

// clientCopies counts this process's descriptors on l's pipe other than the fake's
// own two: the copies the client holds.
func (l *busLock) clientCopies(t *testing.T) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(l.r.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Name() == fmt.Sprint(l.r.Fd()) || e.Name() == fmt.Sprint(l.w.Fd()) {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == want {
			n++
		}
	}
	return n
}

// awaitReleased closes the fake's own write end (the client holds its copy by now) and
// waits for end of file on the read end: every copy of the lock is closed.
func (l *busLock) awaitReleased(t *testing.T) {
	t.Helper()
	l.w.Close()
	if err := l.r.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the lock's pipe: %v, want end of file (the lock released)", err)
	}
}

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
	addr := privateBus(t)
	fake := newBusLogind(t, addr, 5*time.Second)
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
		LogindConfDir: fake.confDir,
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

	lock := within(t, fake.inhibit, "Inhibit")
	if lock.what != "shutdown" || lock.mode != "delay" || lock.who != "plinthd" || lock.why == "" {
		t.Errorf("Inhibit(%q, %q, %q, %q), want a delay lock on shutdown by plinthd", lock.what, lock.who, lock.why, lock.mode)
	}
	// logind's 5s was too short for 25s: the drop-in, then SIGHUP through systemd.
	b, err := os.ReadFile(filepath.Join(fake.confDir, DropInName))
	if err != nil || !strings.Contains(string(b), "InhibitDelayMaxSec=25\n") {
		t.Errorf("drop-in %q (%v), want InhibitDelayMaxSec=25", b, err)
	}
	fake.mu.Lock()
	kills := slices.Clone(fake.kills)
	fake.mu.Unlock()
	if !slices.Equal(kills, []string{"systemd-logind.service main 1"}) {
		t.Errorf("KillUnit calls %v, want one SIGHUP to logind's main process", kills)
	}

	fake.prepareForShutdown(true)
	var order []string
	for range 3 {
		c := within(t, pods.calls, "a pod stopped")
		order = append(order, fmt.Sprintf("%s/%v", c.pod, c.grace))
		if len(order) == 1 {
			// The lock was taken before any signal was handled: the client holds it.
			if n := lock.clientCopies(t); n != 1 {
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
	lock.awaitReleased(t)
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
	fake.prepareForShutdown(false)
	again := within(t, fake.inhibit, "Inhibit again after the cancellation")
	if m.ShuttingDown() {
		t.Error("still shutting down after PrepareForShutdown(false)")
	}
	if again == lock || again.mode != "delay" {
		t.Errorf("second lock %+v", again)
	}
}

// Only logind's own signals count: another client emitting PrepareForShutdown is
// ignored, since the match names logind's well-known name.
func TestDBusLogindIgnoresSignalsFromOthers(t *testing.T) {
	addr := privateBus(t)
	fake := newBusLogind(t, addr, 30*time.Second)
	lg, err := DialLogind(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if d, err := lg.InhibitDelayMax(context.Background()); err != nil || d != 30*time.Second {
		t.Fatalf("InhibitDelayMax() = %v, %v; want 30s", d, err)
	}
	impostor, err := dbus.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	if err := impostor.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := impostor.Hello(); err != nil {
		t.Fatal(err)
	}
	if err := impostor.Emit(logindPath, logindInterface+".PrepareForShutdown", true); err != nil {
		t.Fatal(err)
	}
	fake.prepareForShutdown(false)
	if got := within(t, lg.PrepareForShutdown(), "a PrepareForShutdown"); got != false {
		t.Error("the impostor's PrepareForShutdown(true) was delivered")
	}
}

// A bus without logind (a container without systemd) is logind unavailable, not a
// logind that never speaks.
func TestDialLogindFailsWithoutLogind(t *testing.T) {
	addr := privateBus(t)
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
