package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notifySocket plays systemd's side of the notify protocol: it records every datagram
// with the time it arrived.
type notifySocket struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []notifyMsg
}

type notifyMsg struct {
	at    time.Time
	state string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	s := &notifySocket{path: path, conn: conn}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, notifyMsg{at: time.Now(), state: string(buf[:n])})
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return s
}

// with returns the messages containing line, in order of arrival.
func (s *notifySocket) with(line string) []notifyMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []notifyMsg
	for _, m := range s.msgs {
		for _, l := range strings.Split(m.state, "\n") {
			if l == line {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

func (s *notifySocket) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		out = append(out, m.state)
	}
	return out
}

// TestControlNotifiesSystemd runs plinth-control as its Type=notify unit does: it
// says what it waits for while it starts, READY=1 once the API serves, pings the
// watchdog (WatchdogSec=2s: every second) while its API answers /livez through the
// listener, and STOPPING=1 when told to stop.
func TestControlNotifiesSystemd(t *testing.T) {
	notify := newNotifySocket(t)
	port := freePort(t)
	control := start(t, "plinth-control", []string{"NOTIFY_SOCKET=" + notify.path, "WATCHDOG_USEC=2000000"},
		"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port))
	eventually(t, 60*time.Second, "READY=1 from plinth-control", func() (bool, string) {
		if control.exited() {
			t.Fatalf("plinth-control exited: %v\n%s", control.err, tail(control.log, 20))
		}
		return len(notify.with("READY=1")) > 0, fmt.Sprint(notify.all())
	})
	ready := notify.with("READY=1")[0]
	if want := fmt.Sprintf("STATUS=serving the API on 127.0.0.1:%d; etcd embedded in", port); !strings.Contains(ready.state, want) {
		t.Errorf("READY=1 came with %q; want a status starting %q", ready.state, want)
	}
	all := notify.all()
	if len(all) == 0 || !strings.HasPrefix(all[0], "STATUS=connecting to etcd") {
		t.Errorf("first notification %q; want the status while etcd is connected", all)
	}
	time.Sleep(3 * time.Second)
	var afterReady int
	for _, m := range notify.with("WATCHDOG=1") {
		if m.at.After(ready.at) {
			afterReady++
		}
	}
	if afterReady < 2 {
		t.Errorf("%d watchdog pings in the 3 s after READY=1; want one a second: %q", afterReady, notify.all())
	}
	control.kill(syscall.SIGTERM)
	if control.err != nil {
		t.Errorf("plinth-control exited with %v after SIGTERM\n%s", control.err, tail(control.log, 20))
	}
	if len(notify.with("STOPPING=1")) == 0 {
		t.Errorf("no STOPPING=1 before exit: %q", notify.all())
	}
}
