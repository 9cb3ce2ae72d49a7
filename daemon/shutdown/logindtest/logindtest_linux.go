//go:build linux

package logindtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"github.com/plinth/plinth/internal/kerneltest"
)

// D-Bus names of logind and systemd, as org.freedesktop.login1(5) and
// org.freedesktop.systemd1(5) give them.
const (
	LogindName      = "org.freedesktop.login1"
	LogindPath      = dbus.ObjectPath("/org/freedesktop/login1")
	LogindInterface = "org.freedesktop.login1.Manager"
	SystemdName     = "org.freedesktop.systemd1"
	SystemdPath     = dbus.ObjectPath("/org/freedesktop/systemd1")
)

// PrivateBus starts a dbus-daemon of the test's own and returns its address; it is
// stopped when the test ends. Anyone on it may own any name and send anything: the
// test plays both logind and its client.
func PrivateBus(t testing.TB) string {
	t.Helper()
	kerneltest.Require(t, kerneltest.DBusDaemon)
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
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
	cmd.Stderr = testWriter{t} // the process is stopped in Cleanup, before the test ends
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

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Dial connects to the bus at addr as a plain client.
func Dial(t testing.TB, addr string) *dbus.Conn {
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
	return conn
}

// Logind is the fake logind (and systemd) on a bus.
type Logind struct {
	t     testing.TB
	conn  *dbus.Conn
	props *prop.Properties
	// ConfDir is the logind.conf.d the fake rereads on SIGHUP.
	ConfDir string

	mu    sync.Mutex
	locks []*Lock
	kills []string
	// Inhibits receives each lock as it is handed out.
	Inhibits chan *Lock
}

// Lock is one inhibitor lock handed out: the fake's two pipe ends and what was asked.
type Lock struct {
	r, w                 *os.File
	What, Who, Why, Mode string
}

type loginManager struct{ f *Logind }

func (m loginManager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	fd := dbus.UnixFD(w.Fd()) // before the test may see (and close) it
	l := &Lock{r: r, w: w, What: what, Who: who, Why: why, Mode: mode}
	m.f.mu.Lock()
	m.f.locks = append(m.f.locks, l)
	m.f.mu.Unlock()
	m.f.Inhibits <- l
	return fd, nil
}

type systemdManager struct{ f *Logind }

func (m systemdManager) KillUnit(unit, who string, signal int32) *dbus.Error {
	m.f.mu.Lock()
	m.f.kills = append(m.f.kills, fmt.Sprintf("%s %s %d", unit, who, signal))
	m.f.mu.Unlock()
	if unit != "systemd-logind.service" || signal != int32(syscall.SIGHUP) {
		return nil
	}
	d, err := ReadInhibitDelayMaxSec(m.f.ConfDir)
	if err != nil {
		return dbus.MakeFailedError(err)
	}
	if d > 0 {
		m.f.props.SetMust(LogindInterface, "InhibitDelayMaxUSec", uint64(d/time.Microsecond))
	}
	return nil
}

// NewLogind exports a fake logind with InhibitDelayMaxUSec delayMax on the bus at addr.
func NewLogind(t testing.TB, addr string, delayMax time.Duration) *Logind {
	t.Helper()
	conn := Dial(t, addr)
	f := &Logind{t: t, conn: conn, ConfDir: filepath.Join(t.TempDir(), "logind.conf.d"), Inhibits: make(chan *Lock, 10)}
	if err := conn.Export(loginManager{f}, LogindPath, LogindInterface); err != nil {
		t.Fatal(err)
	}
	if err := conn.Export(systemdManager{f}, SystemdPath, "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	var err error
	f.props, err = prop.Export(conn, LogindPath, prop.Map{LogindInterface: {
		"InhibitDelayMaxUSec": {Value: uint64(delayMax / time.Microsecond), Emit: prop.EmitFalse},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{LogindName, SystemdName} {
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

// PrepareForShutdown emits the signal as logind does when a shutdown begins (true) or
// is cancelled (false).
func (f *Logind) PrepareForShutdown(active bool) {
	f.t.Helper()
	if err := f.conn.Emit(LogindPath, LogindInterface+".PrepareForShutdown", active); err != nil {
		f.t.Fatal(err)
	}
}

// Kills returns the KillUnit calls so far, as "unit who signal".
func (f *Logind) Kills() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.kills)
}

// ClientCopies counts this process's descriptors on the lock's pipe other than the
// fake's own two: the copies a client in this process holds.
func (l *Lock) ClientCopies(t testing.TB) int {
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

// AwaitReleased closes the fake's own write end (call it once the client holds its
// copy) and waits up to timeout for end of file on the read end: every copy of the
// lock, in any process, is closed.
func (l *Lock) AwaitReleased(t testing.TB, timeout time.Duration) {
	t.Helper()
	l.w.Close()
	if err := l.r.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the lock's pipe: %v, want end of file (the lock released)", err)
	}
}

// ReadInhibitDelayMaxSec reads InhibitDelayMaxSec= from the *.conf files of dir in
// lexical order, the last one winning, as logind does; 0 when none sets it.
func ReadInhibitDelayMaxSec(dir string) (time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil {
		return 0, err
	}
	var d time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "InhibitDelayMaxSec="); ok {
				s, err := strconv.Atoi(v)
				if err != nil {
					return 0, fmt.Errorf("%s: %q: %w", f, line, err)
				}
				d = time.Duration(s) * time.Second
			}
		}
	}
	return d, nil
}
