package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The archive must unpack with a real cpio: busybox's, which the machines have (it is
// also what builds the pods tests' root filesystems).
func TestArchiveUnpacksWithCpio(t *testing.T) {
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Fatalf("busybox is installed by scripts/install-deps.sh: %v", err)
	}
	host := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(host, []byte("from the host\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	a := newArchive()
	a.addFile("/etc/conf", 0o644, []byte("odd length!"))
	if err := a.addHostFile("/usr/bin/tool", host); err != nil {
		t.Fatal(err)
	}
	a.addSymlink("/bin/sh", "busybox")
	a.mkdirAll("/empty/dir")
	var buf bytes.Buffer
	if err := a.writeTo(&buf); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cmd := exec.Command("busybox", "cpio", "-i", "-d")
	cmd.Dir = dir
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("busybox cpio -i: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/conf")); err != nil || string(b) != "odd length!" {
		t.Fatalf("etc/conf = %q, %v", b, err)
	}
	st, err := os.Stat(filepath.Join(dir, "usr/bin/tool"))
	if err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("usr/bin/tool: %v, %v", st, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "bin/sh")); err != nil || target != "busybox" {
		t.Fatalf("bin/sh -> %q, %v", target, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "empty/dir")); err != nil || !st.IsDir() {
		t.Fatalf("empty/dir: %v", err)
	}
}
