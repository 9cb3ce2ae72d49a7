package sysinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadUint(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pid_max")
	if err := os.WriteFile(good, []byte("4194304\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadUint(good); err != nil || v != 4194304 {
		t.Fatalf("ReadUint = %d, %v; want 4194304", v, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUint(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `"max"`) {
		t.Fatalf("ReadUint of \"max\": %v, want an error naming the file and the content", err)
	}
	if _, err := ReadUint(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("ReadUint of a missing file: %v, want not-exist", err)
	}
}
