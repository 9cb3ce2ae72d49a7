package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCommand runs `plinthctl check ARGS` over the fixture tree of h (--root), with h's
// runc and libseccomp fakes.
func runCommand(t *testing.T, h *fakeHost, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := h.env
	env.System = nil // --root must replace it
	code := Command(context.Background(), env, append([]string{"--root", h.root}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCommandExitsNonZeroOnFail(t *testing.T) {
	h := newFakeHost(t)
	noConfig := []string{"--config", "", "--config-dir", ""}

	code, out, errOut := runCommand(t, h, noConfig...)
	if code != 0 || strings.Contains(out, "FAIL") || errOut != "" {
		t.Fatalf("swap off: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	// Only a fixture tree: the probes that would ask the kernel say so.
	if !strings.Contains(out, "not probed") || !strings.Contains(out, "6.12.48+deb13-amd64") {
		t.Errorf("stdout lacks the fixture's kernel or the unprobed features:\n%s", out)
	}

	h.write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/swapfile file 1048572 0 -2\n")
	code, out, _ = runCommand(t, h, noConfig...)
	if code != 1 || !strings.Contains(out, "FAIL  swap") || !strings.Contains(out, "failSwapOn is true") {
		t.Fatalf("swap on: exit %d, stdout:\n%s", code, out)
	}

	code, out, _ = runCommand(t, h, append(noConfig, "-o", "json")...)
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 {
		t.Fatalf("-o json: exit %d, %v:\n%s", code, err, out)
	}
	if c := check(t, r, "swap"); c.Status != Fail {
		t.Errorf("json swap check: %+v", c)
	}

	// plinthd's configuration decides: failSwapOn: false in a drop-in passes.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "plinthd.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plinthd.d", "swap.yaml"), []byte("failSwapOn: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCommand(t, h, "--config", "", "--config-dir", filepath.Join(dir, "plinthd.d"))
	if code != 0 || !strings.Contains(out, "failSwapOn is false") {
		t.Errorf("failSwapOn false: exit %d:\n%s", code, out)
	}
}

func TestCommandUsageErrors(t *testing.T) {
	h := newFakeHost(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "plinthd.yaml")
	if err := os.WriteFile(bad, []byte("memorySwap:\n  swapBehavior: Sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", bad, "--config-dir", ""}, `memorySwap.swapBehavior: Unsupported value: "Sometimes"`},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--config", "", "-o", "yaml"}, `-o "yaml"`},
		{[]string{"--config", "", "extra"}, "usage: plinthctl check"},
	} {
		code, out, errOut := runCommand(t, h, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
