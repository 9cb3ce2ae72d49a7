//go:build linux

package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
	kseccomp "github.com/plinth/plinth/kernel/seccomp"
)

// A filter cannot be removed from a process, so these tests never load one into the
// test process: they re-execute the test binary with the profile and a command in the
// environment, and that child loads the filter and becomes the command (filters
// survive execve), or runs syscall probes itself.
const (
	childProfileEnv = "PLINTH_SECCOMP_TEST_PROFILE"
	childArgvEnv    = "PLINTH_SECCOMP_TEST_ARGV"
	probeCommand    = "plinth-seccomp-probe"
)

func TestMain(m *testing.M) {
	if prof, ok := os.LookupEnv(childProfileEnv); ok {
		os.Exit(runChild(prof, os.Getenv(childArgvEnv)))
	}
	os.Exit(m.Run())
}

func runChild(profile, argvJSON string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "seccomp test child:", err); return 125 }
	var argv []string
	if err := json.Unmarshal([]byte(argvJSON), &argv); err != nil || len(argv) == 0 {
		return fail(fmt.Errorf("argv %q: %v", argvJSON, err))
	}
	var p specs.LinuxSeccomp
	if err := json.Unmarshal([]byte(profile), &p); err != nil {
		return fail(err)
	}
	f, err := kseccomp.Build(&p)
	if err != nil {
		return fail(err)
	}
	if err := f.LoadIntoThisProcess(); err != nil {
		return fail(err)
	}
	if argv[0] == probeCommand {
		return probe(argv[1:])
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fail(err)
	}
	return fail(unix.Exec(path, argv, os.Environ()))
}

// probe makes each syscall named in args once and prints "name=errno" lines, "0" for
// success. The directory to work in comes first.
func probe(args []string) int {
	dir := args[0]
	result := func(err error) string {
		var errno syscall.Errno
		switch {
		case err == nil:
			return "0"
		case errors.As(err, &errno):
			return unix.ErrnoName(errno)
		}
		return err.Error()
	}
	for _, name := range args[1:] {
		var err error
		switch name {
		case "mkdir":
			err = unix.Mkdir(filepath.Join(dir, "made-by-mkdir"), 0o755)
		case "mkdirat":
			err = unix.Mkdirat(unix.AT_FDCWD, filepath.Join(dir, "made-by-mkdirat"), 0o755)
		case "write-file":
			err = os.WriteFile(filepath.Join(dir, "written"), []byte("ok"), 0o644)
		case "getpid":
			if unix.Getpid() <= 0 {
				err = errors.New("no pid")
			}
		case "add_key":
			_, err = unix.AddKey("user", "plinth-seccomp-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		case "keyctl":
			_, err = unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
		default:
			err = fmt.Errorf("unknown probe %q", name)
		}
		fmt.Printf("%s=%s\n", name, result(err))
	}
	return 0
}

// runUnder runs argv in a child process under profile and returns its output and error.
func runUnder(t *testing.T, profile *specs.LinuxSeccomp, argv ...string) (string, error) {
	t.Helper()
	prof, err := json.Marshal(profile)
	if err != nil {
		t.Fatal(err)
	}
	av, _ := json.Marshal(argv)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childProfileEnv+"="+string(prof), childArgvEnv+"="+string(av))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 125 {
		t.Fatalf("the child could not run %q under the profile: %s", argv, out)
	}
	return string(out), err
}

func probeUnder(t *testing.T, profile *specs.LinuxSeccomp, probes ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out, err := runUnder(t, profile, append([]string{probeCommand, dir}, probes...)...)
	if err != nil {
		t.Fatalf("probe child: %v: %s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

// A Localhost profile read from the profile root, validated and compiled the way
// plinthd does it, makes mkdir and mkdirat fail with EPERM in a real process, while
// the process goes on writing files.
func TestLocalhostProfileDeniesMkdirInAChild(t *testing.T) {
	kerneltest.Require(t, kerneltest.Seccomp)
	requireLibseccomp(t)
	root, _ := profileTree(t)
	p, _, err := LoadLocalhost(Libseccomp{}, root, "deny-mkdir.json")
	if err != nil {
		t.Fatal(err)
	}
	got := probeUnder(t, p, "mkdir", "mkdirat", "write-file", "getpid")
	want := map[string]string{"mkdir": "EPERM", "mkdirat": "EPERM", "write-file": "0", "getpid": "0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// The same probes without the mkdir rules succeed: the EPERM came from the filter.
	allowAll := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
	if got := probeUnder(t, allowAll, "mkdir", "mkdirat"); got["mkdir"] != "0" || got["mkdirat"] != "0" {
		t.Errorf("without the rules: %v", got)
	}
	// And a shell under the profile sees it too.
	dir := t.TempDir()
	out, err := runUnder(t, p, "/bin/sh", "-c", "mkdir "+filepath.Join(dir, "d")+"; echo written > "+filepath.Join(dir, "f")+" && cat "+filepath.Join(dir, "f"))
	if err != nil || !strings.Contains(out, "Operation not permitted") || !strings.Contains(out, "written") {
		t.Errorf("shell under the profile: %v: %s", err, out)
	}
}

// An errnoRet other than EPERM reaches the process.
func TestErrnoRetReachesTheProcess(t *testing.T) {
	kerneltest.Require(t, kerneltest.Seccomp)
	requireLibseccomp(t)
	p := mustParse(t, `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":122}]}`)
	if _, err := Validate(Libseccomp{}, "edquot.json", p); err != nil {
		t.Fatal(err)
	}
	if got := probeUnder(t, p, "mkdir"); got["mkdir"] != "EDQUOT" {
		t.Errorf("mkdir: got %q, want EDQUOT (errno 122)", got["mkdir"])
	}
}

// Under RuntimeDefault (a container without capabilities) an ordinary shell workload
// runs, while keyrings and new user namespaces are refused although the child runs as
// root: the refusal is the filter's.
func TestRuntimeDefaultRunsAWorkloadAndDeniesTheDangerous(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.Seccomp)
	requireLibseccomp(t)
	p := RuntimeDefault(nil)

	out, err := runUnder(t, p, "/bin/sh", "-c", "ls / >/dev/null && cat /proc/self/status | grep -q Seccomp && echo ok")
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("shell workload under RuntimeDefault: %v: %s", err, out)
	}
	status, err := runUnder(t, p, "/bin/sh", "-c", "grep '^Seccomp:' /proc/self/status")
	if err != nil || !strings.Contains(status, "Seccomp:\t2") {
		t.Errorf("the workload is not in seccomp filter mode: %v: %s", err, status)
	}

	got := probeUnder(t, p, "add_key", "keyctl", "mkdir", "write-file")
	for k, v := range map[string]string{"add_key": "EPERM", "keyctl": "EPERM", "mkdir": "0", "write-file": "0"} {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}

	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("util-linux's unshare is needed: %v", err)
	}
	if out, err := exec.Command(unshare, "-U", "true").CombinedOutput(); err != nil {
		t.Fatalf("control: unshare -U without a filter fails too, so the test proves nothing: %v: %s", err, out)
	}
	out, err = runUnder(t, p, unshare, "-U", "true")
	if err == nil || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("unshare -U under RuntimeDefault: %v: %s", err, out)
	}
	// Other namespaces stay possible for root in the child (the filter blocks only
	// CLONE_NEWUSER), and with CAP_SYS_ADMIN the profile opens user namespaces too.
	if out, err := runUnder(t, p, unshare, "-u", "true"); err != nil {
		t.Errorf("unshare -u under RuntimeDefault: %v: %s", err, out)
	}
	if out, err := runUnder(t, RuntimeDefault([]string{"CAP_SYS_ADMIN"}), unshare, "-U", "true"); err != nil {
		t.Errorf("unshare -U under RuntimeDefault with CAP_SYS_ADMIN: %v: %s", err, out)
	}
}
