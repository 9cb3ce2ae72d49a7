package pressure

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// loopDevices is the feature loopFilesystem needs.
var loopDevices = kerneltest.Feature{Name: "loop", Probe: func() error {
	var errs []error
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		errs = append(errs, err)
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}}

func run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// loopFilesystem makes an ext4 filesystem of size bytes in a file, attaches it to a
// loop device and mounts it; cleanup unmounts and detaches even if the test fails.
func loopFilesystem(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	// -m 0: no blocks reserved for root, so what is free is what f_bavail says.
	run(tb, "mkfs.ext4", "-q", "-F", "-m", "0", img)
	dev := run(tb, "losetup", "--find", "--show", img)
	tb.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			tb.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	run(tb, "mount", "-t", "ext4", dev, mnt)
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

func TestDiskPressureFromFilledLoopFilesystem(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, loopDevices)
	mnt := loopFilesystem(t, 64<<20)
	p := startInProcess(t, pressuresignals.Options{NodefsDir: mnt, ImagefsDir: mnt}, pressure.DefaultEvictionHard(), nil, nil)
	p.waitCondition(t, corev1.NodeDiskPressure, corev1.ConditionFalse, 10*time.Second)
	if c := conditionOf(p, corev1.NodeDiskPressure); c.Reason != pressure.ReasonNoDiskPressure {
		t.Fatalf("DiskPressure on an empty filesystem: %+v", c)
	}

	fs, err := sysinfo.FilesystemStats(mnt)
	if err != nil {
		t.Fatal(err)
	}
	// Leave 5% free: below nodefs.available<10%.
	fill := int64(fs.AvailableBytes) - int64(fs.CapacityBytes)/20
	f, err := os.Create(filepath.Join(mnt, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for written := int64(0); written < fill; written += int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), fill-written)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil { // write-back: statfs counts blocks once allocated
		t.Fatal(err)
	}
	filled := time.Now()
	at, c := p.waitCondition(t, corev1.NodeDiskPressure, corev1.ConditionTrue, 10*time.Second)
	t.Logf("DiskPressure True %s after the fill: %s", at.Sub(filled).Round(time.Millisecond), c.Message)
	if c.Reason != pressure.ReasonDiskPressure || !strings.Contains(c.Message, "nodefs.available") || !strings.Contains(c.Message, "10% of") {
		t.Errorf("DiskPressure = %s %q; want the nodefs.available crossing named", c.Reason, c.Message)
	}
}

func conditionOf(p *inProcess, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range p.manager.Conditions() {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}
