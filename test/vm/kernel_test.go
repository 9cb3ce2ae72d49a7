package vm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDependedKernel(t *testing.T) {
	out := `linux-image-6.12-amd64
  Depends: linux-image-6.12.117+deb12-amd64
  Depends: <linux-image-6.12.117+deb12-amd64-unsigned>
linux-image-6.12.117+deb12-amd64-unsigned
`
	if got := dependedKernel(out); got != "linux-image-6.12.117+deb12-amd64" {
		t.Fatalf("dependedKernel = %q", got)
	}
	if got := dependedKernel("linux-image-amd64\n  Recommends: firmware-linux-free\n"); got != "" {
		t.Fatalf("no Depends line, got %q", got)
	}
}

func TestModuleReleaseWantsOneDirectory(t *testing.T) {
	root := t.TempDir()
	if _, err := moduleRelease(root); err == nil {
		t.Fatal("no lib/modules: want an error")
	}
	if err := os.MkdirAll(filepath.Join(root, "lib/modules/6.1.0-56-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := moduleRelease(root); err != nil || r != "6.1.0-56-amd64" {
		t.Fatalf("moduleRelease = %q, %v", r, err)
	}
	if err := os.MkdirAll(filepath.Join(root, "lib/modules/6.12.117+deb12-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := moduleRelease(root); err == nil {
		t.Fatal("two releases: want an error")
	}
	k := Kernel{Release: "6.12.117+deb12-amd64", Root: root}
	if k.Label() != "6.12.117+deb12" || k.Vmlinuz() != filepath.Join(root, "boot/vmlinuz-6.12.117+deb12-amd64") {
		t.Fatalf("label %q vmlinuz %q", k.Label(), k.Vmlinuz())
	}
}

func TestGuestConfigQuotesForTheShell(t *testing.T) {
	c := guestConfig{Repo: "/work/it's", TestTimeout: "5m0s", Binaries: []TestBinary{
		{Name: "kernel_nft.test", Dir: "kernel/nft", Tests: []string{"TestA", "TestB"}},
	}}
	want := `REPO='/work/it'\''s'
TEST_TIMEOUT='5m0s'
MODULES='crc32c_generic nfnetlink nf_tables nf_conntrack nf_conntrack_netlink nf_nat veth bridge overlay loop'
PACKAGES='kernel_nft.test:kernel/nft:^(TestA|TestB)$'
`
	if got := c.render(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLddLibraries(t *testing.T) {
	out := `	linux-vdso.so.1 (0x00007ffd)
	libseccomp.so.2 => /lib/x86_64-linux-gnu/libseccomp.so.2 (0x00007f65)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f65)
	/lib64/ld-linux-x86-64.so.2 (0x00007f65)
`
	got, err := lddLibraries(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libseccomp.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if _, err := lddLibraries("\tlibgone.so.1 => not found\n"); err == nil {
		t.Fatal("a missing library must be an error")
	}
}
