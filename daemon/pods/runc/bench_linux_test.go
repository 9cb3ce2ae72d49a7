//go:build linux

package runc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCreateStart measures create (shim, runc create) plus start of a busybox
// container from a prepared bundle, with the real plinth-shim binary, and reports the
// shim's resident memory and the p50/p99 latency.
//
//	go test -run '^$' -bench CreateStart -benchtime 50x ./daemon/pods/runc
func BenchmarkCreateStart(b *testing.B) {
	e := newTestEnv(b)
	shimBin := filepath.Join(b.TempDir(), "plinth-shim")
	if out, err := exec.Command("go", "build", "-o", shimBin, "github.com/plinth/plinth/cmd/plinth-shim").CombinedOutput(); err != nil {
		b.Fatalf("build plinth-shim: %v: %s", err, out)
	}
	e.cfg.ShimCommand = []string{shimBin}
	e.d = e.newDriver()
	ctx := context.Background()
	var lat []time.Duration
	var rssKiB []int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprintf("bench%d", i)
		id, logPath := e.container(name, corev1.Container{Command: []string{"sleep", "1000"}})
		b.StartTimer()
		start := time.Now()
		cp, err := e.d.Create(ctx, CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", name), LogPath: logPath})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.d.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		rssKiB = append(rssKiB, vmRSS(cp.ShimPID))
		if err := e.d.Kill(ctx, id, 9); err != nil {
			b.Fatal(err)
		}
		if _, err := e.d.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
		if err := e.d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
		_ = os.RemoveAll(filepath.Join(e.dir, "pods", name))
		b.StartTimer()
	}
	slices.Sort(lat)
	slices.Sort(rssKiB)
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[(n*99)/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(rssKiB[n/2]), "shim-rss-KiB")
	}
}

func vmRSS(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
