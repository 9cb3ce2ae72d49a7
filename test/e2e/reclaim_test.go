package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

// reclaimImagefsSize is the tmpfs the disk-pressure test mounts as the node's image
// store, so imagefs.available moves only with what the test and plinthd put there.
const reclaimImagefsSize = 64 << 20

// mountImagefs mounts a fresh tmpfs of size bytes at dir, unmounted at cleanup.
func mountImagefs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("plinth-e2e-imagefs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			t.Errorf("cleanup: unmount %s: %v", dir, err)
		}
	})
}

// fillImagefs allocates a file of size bytes at path in one call, so the pressure
// signals never see it half written; removed at cleanup.
func fillImagefs(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Fatalf("fallocate %s (%d bytes): %v", path, size, err)
	}
}

func availableBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// plinthctlImages lists the node's stored images with plinthctl.
func plinthctlImages(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(binaries(t), "plinthctl"), "image", "list", "--root", root).CombinedOutput()
	if err != nil {
		t.Fatalf("plinthctl image list: %v: %s", err, out)
	}
	return string(out)
}

// nodeMetric returns the sum of the samples of a metric whose labels contain labels,
// from plinthd's /metrics.
func nodeMetric(t *testing.T, healthz int, metric, labels string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", healthz))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(metric) + `(\{[^}]*\})? (\S+)$`)
	for _, line := range strings.Split(string(body), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[1], labels) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func nodeCondition(t *testing.T, kubeconfig, typ string) string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, "get", "node", nodeName, "-o",
		fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")].status}`, typ))
	if err != nil {
		return err.Error()
	}
	return out
}

// A disk-pressure scenario runs image GC before evicting: on a node whose imagefs (a
// small tmpfs) holds an unused image, a file taking imagefs.available under its
// evictionHard threshold raises DiskPressure; node-level reclaim deletes the unused
// image (the image of the running pod stays), the pressure clears, and no pod is
// evicted. Then another file takes it under for good: reclaim frees what it can, and
// the pod is evicted (Failed, reason Evicted, its message naming the resource).
func TestDiskPressureRunsImageGCBeforeEvicting(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	image := reg.PushBusybox(t, "e2e/busybox:v1", "/bin/sh")
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNode(t, c)
	imagefs := filepath.Join(n.stateDir, "images")
	mountImagefs(t, imagefs, reclaimImagefsSize)
	// imagefs.available under 40 MiB of the 64 MiB is pressure; images may go as soon
	// as they are unused; DiskPressure clears 3 s after the last crossing.
	cfg, err := os.ReadFile(n.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, []byte(`evictionHard:
  imagefs.available: 40Mi
evictionEvaluationInterval: 1s
evictionPressureTransitionPeriod: 3s
imageMinimumGCAge: 0s
`)...)
	if err := os.WriteFile(n.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	n.start(t)
	apply(t, c.kubeconfig, podManifest("keeper", image, "  terminationGracePeriodSeconds: 2\n", "",
		"sh", "-c", "while true; do sleep 1; done"))
	var keeper podStatus
	eventually(t, 60*time.Second, "pod keeper Running", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "keeper")
		keeper = p
		return p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, seen
	})
	if got := nodeCondition(t, c.kubeconfig, "DiskPressure"); got != "False" {
		t.Fatalf("DiskPressure %q before the unused image came", got)
	}

	// An unused image, imported as an operator would while plinthd runs, leaving
	// imagefs 6 MiB above the threshold: a node crossing it halfway through an import
	// would reclaim before the image is there, then evict.
	big := bytes.Repeat([]byte("plinth-e2e-unused-image-data\n"), int(availableBytes(t, imagefs)-46<<20)/29)
	unused, err := mutate.AppendLayers(imagetest.Busybox(t, "/bin/sh"), imagetest.Layer(t, imagetest.File{Name: "big", Body: big, Mode: 0o644}))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("example.com/e2e/unused:v1")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "unused.tar")
	if err := tarball.WriteToFile(archive, tag, unused); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(binaries(t), "plinthctl"), "image", "import", "--root", imagefs, archive).CombinedOutput(); err != nil {
		t.Fatalf("plinthctl image import: %v: %s", err, out)
	}
	if list := plinthctlImages(t, imagefs); !strings.Contains(list, "example.com/e2e/unused") {
		t.Fatalf("the imported image is not listed:\n%s", list)
	}
	// Then a file nothing collects takes imagefs 6 MiB under the threshold at once
	// (one fallocate): only deleting the unused image brings it back above.
	fillImagefs(t, filepath.Join(imagefs, "e2e-filler-1"), availableBytes(t, imagefs)-34<<20)
	t.Logf("imported an unused image of %d MiB and filled imagefs to %d MiB available", len(big)>>20, availableBytes(t, imagefs)>>20)

	eventually(t, 30*time.Second, "node-level reclaim deleted the unused image", func() (bool, string) {
		list := plinthctlImages(t, imagefs)
		return !strings.Contains(list, "example.com/e2e/unused") && strings.Contains(list, "e2e/busybox"), list
	})
	if got := nodeMetric(t, n.healthz, "plinth_eviction_node_reclaimed_total", `signal="imagefs.available"`); got < float64(len(big)) {
		t.Errorf("plinth_eviction_node_reclaimed_total{signal=imagefs.available} = %v, want at least the %d bytes of the image", got, len(big))
	}
	if got := nodeMetric(t, n.healthz, "plinth_image_garbage_collected_total", `reason="space"`); got != 1 {
		t.Errorf("plinth_image_garbage_collected_total{reason=space} = %v, want 1", got)
	}
	log, _ := os.ReadFile(n.proc.log)
	if !regexp.MustCompile(`node condition changed.*type=DiskPressure status=True`).Match(log) {
		t.Errorf("plinthd never reported DiskPressure True:\n%s", tail(n.proc.log, 30))
	}
	if !regexp.MustCompile(`node-level reclaim.*signal=imagefs.available.*imagesDeleted=\[sha256:`).Match(log) {
		t.Errorf("plinthd's log does not say what reclaim deleted:\n%s", tail(n.proc.log, 30))
	}
	eventually(t, 30*time.Second, "DiskPressure False again", func() (bool, string) {
		got := nodeCondition(t, c.kubeconfig, "DiskPressure")
		return got == "False", got
	})
	if got := nodeMetric(t, n.healthz, "plinth_evictions", ""); got != 0 {
		t.Errorf("plinth_evictions = %v after reclaim freed enough, want 0", got)
	}
	p, seen := getPod(t, c.kubeconfig, "keeper")
	if cs := p.Status.ContainerStatuses; p.Status.Phase != "Running" || len(cs) != 1 || cs[0].State.Running == nil ||
		cs[0].ContainerID != keeper.Status.ContainerStatuses[0].ContainerID || cs[0].RestartCount != 0 {
		t.Fatalf("keeper after reclaim: %s; want it running untouched", seen)
	}

	// A file nothing collects takes imagefs under the threshold: reclaim frees what
	// it can (nothing: the pod's image is in use), then the pod is evicted.
	fillImagefs(t, filepath.Join(imagefs, "e2e-filler-2"), availableBytes(t, imagefs)-32<<20)
	eventually(t, 60*time.Second, "keeper evicted", func() (bool, string) {
		out, err := kubectl(t, c.kubeconfig, "get", "pod", "keeper", "-o", "jsonpath={.status.phase} {.status.reason} {.status.message}")
		return err == nil && strings.HasPrefix(out, "Failed Evicted ") && strings.Contains(out, "ephemeral-storage"), fmt.Sprint(out, err)
	})
	if got := nodeMetric(t, n.healthz, "plinth_evictions", `eviction_signal="imagefs.available"`); got != 1 {
		t.Errorf("plinth_evictions{eviction_signal=imagefs.available} = %v, want 1", got)
	}
	log, _ = os.ReadFile(n.proc.log)
	if reclaims := regexp.MustCompile(`node-level reclaim.*signal=imagefs.available`).FindAll(log, -1); len(reclaims) < 2 {
		t.Errorf("%d node-level reclaims for imagefs.available, want one before each eviction", len(reclaims))
	}
	// Evicted, the pod no longer holds its image: the next reclaim deletes it too.
	eventually(t, 30*time.Second, "the evicted pod's image deleted", func() (bool, string) {
		list := plinthctlImages(t, imagefs)
		return !strings.Contains(list, "e2e/busybox"), list
	})
}
