package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTokenCommand(t *testing.T) {
	e := newHandlerEnv(t)
	dataDir := t.TempDir()
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: "` + e.url + `"
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(e.caPEM) + `
users:
- name: u
  user:
    token: test-admin
contexts:
- name: x
  context:
    cluster: c
    user: u
current-context: x
`
	if err := os.WriteFile(filepath.Join(dataDir, "admin.kubeconfig"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := TokenCommand(context.Background(), args, dataDir, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, stderr := run("create", "--ttl", "2h", "--description", "rack 4")
	if code != 0 || !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}\n$`).MatchString(out) {
		t.Fatalf("create: %d %q %q", code, out, stderr)
	}
	id, secret, _ := strings.Cut(strings.TrimSpace(out), ".")

	code, out, stderr = run("list")
	if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, id) || !strings.Contains(out, "rack 4") || !regexp.MustCompile(`\s(2h0m0s|1h59m5\ds)\s`).MatchString(out) {
		t.Fatalf("list: %d %q %q", code, out, stderr)
	}
	if strings.Contains(out, secret) {
		t.Fatal("list shows the secret")
	}

	// Flags after the argument, and a whole token in place of the ID.
	if code, out, stderr = run("delete", id+"."+secret, "--data-dir", dataDir); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("delete: %d %q %q", code, out, stderr)
	}
	if code, _, stderr = run("delete", id); code != 1 || !strings.Contains(stderr, "not found") {
		t.Fatalf("second delete: %d %q", code, stderr)
	}
	code, out, stderr = run("create", "--print-join-command", "--ttl", "0")
	if code != 0 || !regexp.MustCompile(`^plinthctl join --server https://127\.0\.0\.1:\d+ --token [a-z0-9]{6}\.[a-z0-9]{16} --ca-cert-hash sha256:[0-9a-f]{64}\n$`).MatchString(out) {
		t.Fatalf("create --print-join-command: %d %q %q", code, out, stderr)
	}
	for _, args := range [][]string{{}, {"frobnicate"}, {"delete"}, {"list", "extra"}, {"create", "--ttl", "soon"}} {
		if code, _, _ := run(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, _, stderr := run("list", "--kubeconfig", filepath.Join(dataDir, "missing")); code != 1 || !strings.Contains(stderr, "--kubeconfig") {
		t.Fatalf("missing kubeconfig: %d %q", code, stderr)
	}
}
