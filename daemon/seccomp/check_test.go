package seccomp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func runCheck(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = CheckCommand(Libseccomp{}, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckCommand(t *testing.T) {
	requireLibseccomp(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],"syscalls":[{"names":["mkdir","mkdirat","socketcall"],"action":"SCMP_ACT_ERRNO"}]}`), 0o644)
	os.WriteFile(bad, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO"},{"names":["rmdir","mkdri"],"action":"SCMP_ACT_ERRNO"}]}`), 0o644)

	code, out, errOut := runCheck("check", good)
	if code != 0 || errOut != "" ||
		!strings.HasPrefix(out, "OK "+good+": default action SCMP_ACT_ALLOW, 1 rules for 3 syscall names, architectures SCMP_ARCH_X86_64, ") ||
		!strings.Contains(out, `warning: syscalls[0].names[2]: "socketcall" does not exist on SCMP_ARCH_X86_64`) {
		t.Errorf("good: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = runCheck("check", bad)
	if code != 1 || out != "" || strings.TrimSpace(errOut) != "seccomp profile "+bad+`: syscalls[1].names[1]: "mkdri": unknown syscall on SCMP_ARCH_X86_64 (libseccomp `+libraryVersion(t)+")" {
		t.Errorf("bad: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, _, errOut = runCheck("check", filepath.Join(dir, "none.json"))
	if code != 1 || !strings.Contains(errOut, "none.json: no such file") {
		t.Errorf("missing: code %d stderr %s", code, errOut)
	}
	code, _, errOut = runCheck("check", dir)
	if code != 1 || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("directory: code %d stderr %s", code, errOut)
	}
	for _, args := range [][]string{nil, {"check"}, {"check", "a", "b"}, {"lint", good}} {
		if code, _, _ := runCheck(args...); code != 2 {
			t.Errorf("%q: code %d, want 2 (usage)", args, code)
		}
	}
}

func libraryVersion(t *testing.T) string {
	s, err := Libseccomp{}.Support()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(s.String(), "libseccomp ")
}

// What `plinthctl seccomp default` prints is a profile `check` accepts.
func TestDefaultCommandPrintsACheckableProfile(t *testing.T) {
	requireLibseccomp(t)
	code, out, errOut := runCheck("default", "--cap", "CAP_SYS_ADMIN")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	var p specs.LinuxSeccomp
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if !allowedUnconditionally(&p, "mount") {
		t.Error("--cap CAP_SYS_ADMIN did not open mount")
	}
	file := filepath.Join(t.TempDir(), "default.json")
	os.WriteFile(file, []byte(out), 0o644)
	if code, out, errOut := runCheck("check", file); code != 0 {
		t.Errorf("check of the default: %d %s %s", code, out, errOut)
	}
}
