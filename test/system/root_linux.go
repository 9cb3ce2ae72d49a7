package system

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// RootCacheDir is where debootstrapped machine roots are kept between runs, outside the
// repository. PLINTH_SYSTEM_ROOT_CACHE overrides it.
const RootCacheDir = "/var/cache/plinth"

// RootSpec says what the machine image holds. Packages are installed by debootstrap
// (the machine has no network, so whatever the tested packages depend on must be here).
type RootSpec struct {
	Suite    string
	Mirror   string
	Packages []string
}

// BookwormRoot is the image the package tests boot: systemd as init, dbus (logind and
// systemctl need it), and the dependencies of plinth-node (runc, libseccomp2) plus the
// tools the tests inspect the machine with (nft, ip, ps).
var BookwormRoot = RootSpec{
	Suite:  "bookworm",
	Mirror: "http://deb.debian.org/debian",
	Packages: []string{
		"systemd", "systemd-sysv", "dbus", // init, systemctl, logind
		"runc",     // plinth-node Depends (pulls libseccomp2)
		"nftables", // nft: the test checks the purge removed plinthd's tables
		"iproute2", // ip: the test checks the purge removed the pod bridge
		"procps",   // ps, pgrep
	},
}

// key names the cached root: a change to the spec makes a new root, never a stale one.
func (s RootSpec) key() string {
	pkgs := slices.Clone(s.Packages)
	slices.Sort(pkgs)
	sum := sha256.Sum256([]byte(strings.Join([]string{s.Suite, s.Mirror, "minbase", strings.Join(pkgs, ",")}, "\n")))
	return "system-root-" + s.Suite + "-" + hex.EncodeToString(sum[:6])
}

// Root returns the cached root for spec, debootstrapping it first when it is missing
// (about a minute and 270 MB). The root is never written to afterwards: Boot overlays
// it. It is built in a temporary directory and renamed into place, so an interrupted
// build leaves no half root behind under the final name.
func Root(t testing.TB, spec RootSpec) string {
	t.Helper()
	cache := RootCacheDir
	if v := os.Getenv("PLINTH_SYSTEM_ROOT_CACHE"); v != "" {
		cache = v
	}
	dir := filepath.Join(cache, spec.key())
	if _, err := os.Stat(filepath.Join(dir, "usr/lib/systemd/systemd")); err == nil {
		return dir
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatalf("root cache: %v", err)
	}
	tmp, err := os.MkdirTemp(cache, spec.key()+".building-")
	if err != nil {
		t.Fatalf("root cache: %v", err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+strings.Join(spec.Packages, ","),
		spec.Suite, tmp, spec.Mirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debootstrap %s into %s: %v\n%s", spec.Suite, tmp, err, tail(out, 40))
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return dir // built at the same time by another run
		}
		t.Fatalf("root cache: %v", err)
	}
	t.Logf("debootstrapped %s into %s in %s", spec.Suite, dir, time.Since(start).Round(time.Second))
	return dir
}

// tail keeps the last n lines of out, for error messages.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
