//go:build linux

package watchdog

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// listenNotifySocket plays systemd: it binds a datagram socket and points
// NOTIFY_SOCKET at it.
func listenNotifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen on %s: %v", path, err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

func readDatagram(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("reading a notification from the socket: %v", err)
	}
	return string(buf[:n])
}

func TestSystemdNotifierOverARealSocket(t *testing.T) {
	conn := listenNotifySocket(t)
	n := NewSystemdNotifier()

	if err := Ready(n, "node n1 registered"); err != nil {
		t.Fatal(err)
	}
	if got, want := readDatagram(t, conn), "READY=1\nSTATUS=node n1 registered"; got != want {
		t.Fatalf("READY datagram = %q, want %q", got, want)
	}

	if err := Status(n, "renewing lease"); err != nil {
		t.Fatal(err)
	}
	if got, want := readDatagram(t, conn), "STATUS=renewing lease"; got != want {
		t.Fatalf("STATUS datagram = %q, want %q", got, want)
	}

	// The watchdog's first ping goes out as soon as Run starts.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w := New(n, time.Second, func() error { return nil },
		clocktesting.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	go func() { done <- w.Run(ctx) }()
	got := readDatagram(t, conn)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "WATCHDOG=1"; got != want {
		t.Fatalf("watchdog datagram = %q, want %q", got, want)
	}

	if err := Stopping(n); err != nil {
		t.Fatal(err)
	}
	if got, want := readDatagram(t, conn), "STOPPING=1"; got != want {
		t.Fatalf("STOPPING datagram = %q, want %q", got, want)
	}
}

func TestSystemdNotifierWithoutNotifySocketIsANoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := NewSystemdNotifier()
	for _, err := range []error{Ready(n, "x"), Status(n, "x"), Stopping(n), n.Notify("WATCHDOG=1")} {
		if err != nil {
			t.Fatalf("without NOTIFY_SOCKET: %v, want nil", err)
		}
	}
}

func TestSystemdNotifierNamesAMissingSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.sock")
	t.Setenv("NOTIFY_SOCKET", path)
	err := NewSystemdNotifier().Notify("READY=1")
	if err == nil {
		t.Fatal("notifying a socket that does not exist succeeded")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "READY=1") {
		t.Fatalf("error %q does not name the socket and the state", err)
	}
}
