package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStandaloneModeSaysSo(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := start(t, "plinthd", nil, "--config", "", "--config-dir", "", "--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--lock-file", filepath.Join(dir, "lock"), "--state-dir", filepath.Join(dir, "state"))
	eventually(t, 20*time.Second, "standalone plinthd serves /healthz", func() (bool, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	if log := tail(p.log, 20); !strings.Contains(log, "standalone mode") {
		t.Fatalf("plinthd did not say it runs standalone:\n%s", log)
	}
	p.kill(syscall.SIGTERM)
	if p.err != nil {
		t.Fatalf("exit after SIGTERM: %v", p.err)
	}
}

func TestBadConfigIsRefusedNamingFileFieldAndValue(t *testing.T) {
	dir := t.TempDir()
	dropIns := filepath.Join(dir, "plinthd.d")
	if err := os.MkdirAll(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dropIns, "50-lease.yaml")
	if err := os.WriteFile(bad, []byte("nodeLeaseDurationSeconds: -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binaries(t), "plinthd"), "--config", "", "--config-dir", dropIns,
		"--lock-file", filepath.Join(dir, "lock"), "--state-dir", filepath.Join(dir, "state"))
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 {
		t.Fatalf("plinthd with a bad drop-in: %v, want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{bad, "nodeLeaseDurationSeconds", "-3"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("error does not name %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Fatal("a refused configuration still created the state directory")
	}
}
