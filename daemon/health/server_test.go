package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// guard bounds waits so a broken server fails the test instead of hanging it.
const guard = 10 * time.Second

type runningServer struct {
	srv    *Server
	cancel context.CancelFunc
	done   chan error
}

// startServer runs a Server on a free loopback port and waits until it listens;
// setup runs on the Server before Run.
func startServer(t *testing.T, checker *Checker, setup ...func(*Server)) *runningServer {
	t.Helper()
	srv := NewServer("127.0.0.1:0", checker, NewRegistry(), slog.New(slog.DiscardHandler))
	if got := srv.Addr(); got != "" {
		t.Fatalf("Addr() before Run = %q, want empty", got)
	}
	for _, f := range setup {
		f(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rs := &runningServer{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { rs.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-rs.done
	})
	select {
	case <-srv.Listening():
	case err := <-rs.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(guard):
		t.Fatal("server did not start listening")
	}
	return rs
}

// stop cancels Run and returns what it returned.
func (rs *runningServer) stop(t *testing.T) error {
	t.Helper()
	rs.cancel()
	select {
	case err := <-rs.done:
		rs.done <- err // for the cleanup
		return err
	case <-time.After(guard):
		t.Fatal("Run did not return after its context was cancelled")
		return nil
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: guard}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestHealthzTurnsRedWhenACheckFails(t *testing.T) {
	checker := NewChecker()
	checker.Register("lease", func() error { return nil })
	rs := startServer(t, checker)
	base := "http://" + rs.srv.Addr()

	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("healthy /healthz = %d %q, want 200 \"ok\"", code, body)
	}
	if code, body := get(t, base+"/healthz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]lease ok\n") {
		t.Fatalf("healthy /healthz?verbose = %d %q, want 200 listing [+]lease ok", code, body)
	}

	checker.Register("disk", func() error {
		return errors.Join(errors.New("statfs /var/lib/plinth: input/output error"), errors.New("second cause"))
	})
	code, body := get(t, base+"/healthz")
	if code != http.StatusInternalServerError {
		t.Fatalf("/healthz with a failing check = %d, want 500; body %q", code, body)
	}
	wantLine := "[-]disk failed: statfs /var/lib/plinth: input/output error; second cause\n"
	if !strings.Contains(body, wantLine) {
		t.Fatalf("/healthz body %q lacks the line %q", body, wantLine)
	}
	if strings.Contains(body, "[+]lease") {
		t.Fatalf("non-verbose /healthz body %q lists passing checks", body)
	}

	code, body = get(t, base+"/healthz?verbose")
	if code != http.StatusInternalServerError || !strings.Contains(body, "[+]lease ok\n") || !strings.Contains(body, wantLine) {
		t.Fatalf("failing /healthz?verbose = %d %q, want 500 listing both checks", code, body)
	}

	if err := rs.stop(t); err != nil {
		t.Fatalf("Run after a clean stop = %v, want nil", err)
	}
}

func TestMetricsServesGoAndProcessCollectors(t *testing.T) {
	rs := startServer(t, NewChecker())
	code, body := get(t, "http://"+rs.srv.Addr()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d, want 200", code)
	}
	for _, want := range []string{"\ngo_goroutines ", "\nprocess_cpu_seconds_total ", "\nprocess_resident_memory_bytes "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks a %q sample", strings.TrimSpace(want))
		}
	}
}

func TestHandleMountsExtraHandlers(t *testing.T) {
	rs := startServer(t, NewChecker(), func(s *Server) {
		s.Handle("GET /pressure", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "signals")
		}))
	})
	base := "http://" + rs.srv.Addr()
	if code, body := get(t, base+"/pressure"); code != http.StatusOK || body != "signals" {
		t.Fatalf("/pressure = %d %q, want 200 \"signals\"", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz beside an extra handler = %d %q, want 200 \"ok\"", code, body)
	}
	if code, _ := get(t, base+"/other"); code != http.StatusNotFound {
		t.Fatalf("/other = %d, want 404", code)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Handle after Run did not panic")
			}
		}()
		rs.srv.Handle("GET /late", http.NotFoundHandler())
	}()
}

func TestHealthzRejectsWrites(t *testing.T) {
	rs := startServer(t, NewChecker())
	client := &http.Client{Timeout: guard}
	resp, err := client.Post("http://"+rs.srv.Addr()+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz = %d, want 405", resp.StatusCode)
	}
}

func TestRunFailsFastWhenTheAddressIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()

	srv := NewServer(addr, NewChecker(), NewRegistry(), slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Run on a taken address returned nil")
		}
		if !strings.Contains(err.Error(), addr) {
			t.Fatalf("error %q does not name the address %s", err, addr)
		}
	case <-time.After(guard):
		t.Fatal("Run on a taken address did not return")
	}
	select {
	case <-srv.Listening():
		t.Fatal("Listening closed although the listen failed")
	default:
	}
}

func TestRunStopsListeningOnCancel(t *testing.T) {
	rs := startServer(t, NewChecker())
	addr := rs.srv.Addr()
	if err := rs.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil on a clean stop", err)
	}
	conn, err := net.DialTimeout("tcp", addr, guard)
	if err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Run returned", addr)
	}
	if err := rs.srv.Run(context.Background()); err == nil {
		t.Fatal("a second Run succeeded, want an error")
	}
}
