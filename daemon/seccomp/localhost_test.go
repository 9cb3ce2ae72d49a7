package seccomp

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const denyMkdirProfile = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`

// profileTree makes base/root (the profile root) with profiles in it and a file beside
// the root that symlinks may try to reach.
func profileTree(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "seccomp")
	for _, d := range []string{root, filepath.Join(root, "team"), filepath.Join(root, "dir.json")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside = filepath.Join(base, "outside.json")
	write := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(outside, denyMkdirProfile)
	write(filepath.Join(root, "deny-mkdir.json"), denyMkdirProfile)
	write(filepath.Join(root, "team", "app.json"), denyMkdirProfile)
	write(filepath.Join(root, "broken.json"), `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_EROR"}]}`)
	write(filepath.Join(root, "huge.json"), strings.Repeat(" ", MaxProfileBytes+1))
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("team/app.json", "inside-link.json")
	link("../outside.json", "escape-relative.json")
	link(outside, "escape-absolute.json")
	link("team/../../outside.json", "escape-through-dir.json")
	link("/", "slash")
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func TestLoadLocalhostStaysInsideTheRoot(t *testing.T) {
	requireLibseccomp(t)
	root, _ := profileTree(t)
	for _, name := range []string{"deny-mkdir.json", "team/app.json", "inside-link.json", "./team//app.json"} {
		p, s, err := LoadLocalhost(Libseccomp{}, root, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(p.Syscalls) != 1 || s.Names != 2 {
			t.Errorf("%s: profile %+v summary %s", name, p, s)
		}
	}
	for _, tc := range []struct{ name, file, reason string }{
		{"missing.json", filepath.Join(root, "missing.json"), "no such file"},
		{"/etc/passwd", "/etc/passwd", "must be relative to the profile root " + root + ", not absolute"},
		{"../outside.json", filepath.Join(root, "../outside.json"), `must not contain ".."`},
		{"team/../../outside.json", filepath.Join(root, "team/../../outside.json"), `must not contain ".."`},
		{"escape-relative.json", filepath.Join(root, "escape-relative.json"), "resolves outside the profile root"},
		{"escape-absolute.json", filepath.Join(root, "escape-absolute.json"), "resolves outside the profile root"},
		{"escape-through-dir.json", filepath.Join(root, "escape-through-dir.json"), "resolves outside the profile root"},
		{"slash/etc/passwd", filepath.Join(root, "slash/etc/passwd"), "resolves outside the profile root"},
		{"dir.json", filepath.Join(root, "dir.json"), "not a regular file"},
		{"fifo.json", filepath.Join(root, "fifo.json"), "not a regular file"},
		{"huge.json", filepath.Join(root, "huge.json"), "larger than 1048576 bytes"},
		{"broken.json", filepath.Join(root, "broken.json"), `syscalls[0].action: "SCMP_ACT_EROR": unknown action`},
		{"", root, "localhostProfile: empty"},
	} {
		_, _, err := LoadLocalhost(Libseccomp{}, root, tc.name)
		if err == nil {
			t.Errorf("%q: loaded", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "seccomp profile "+tc.file+": ") || !strings.Contains(msg, tc.reason) {
			t.Errorf("%q: %s\nwant the file %s and %q", tc.name, msg, tc.file, tc.reason)
		}
	}
}

func TestLoadLocalhostWithoutTheRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "absent")
	_, _, err := LoadLocalhost(Libseccomp{}, root, "p.json")
	if err == nil || !strings.Contains(err.Error(), "the profile root "+root+" does not exist") {
		t.Fatalf("err = %v", err)
	}
}
