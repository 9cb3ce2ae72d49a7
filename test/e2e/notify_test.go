package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
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
