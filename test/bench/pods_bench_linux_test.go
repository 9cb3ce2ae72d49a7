//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/test/nodesim"
)

const (
	// podBenchCount is how many pods each start-latency run creates.
	podBenchCount = 100
	// podBenchNamespace holds the benchmark's pods, labelled podBenchLabel.
	podBenchNamespace = "default"
	podBenchLabel     = "plinth-bench"
	// podStartTimeout bounds one run of pod starts.
	podStartTimeout = 5 * time.Minute
)

// podBenchInterval is the time between pod creations in the paced runs: 200 ms
// (5 pods/s) or PLINTH_BENCH_POD_INTERVAL.
func podBenchInterval(b *testing.B) time.Duration {
	return envDuration(b, "PLINTH_BENCH_POD_INTERVAL", 200*time.Millisecond)
}

// podBenchWindow is each steady-state window of the resources run: 30 s or
// PLINTH_BENCH_POD_WINDOW.
func podBenchWindow(b *testing.B) time.Duration {
	return envDuration(b, "PLINTH_BENCH_POD_WINDOW", 30*time.Second)
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("%s: %q is not a non-negative duration such as 200ms", name, v)
	}
	return d
}

// BenchmarkPodsOnOneNode runs plinth-control and one real plinthd with pods enabled,
// each as its own process, and images from a registry on loopback in this process
// (busybox-static, as the end-to-end tests). Pods are created already bound
// (spec.nodeName set, so the create is the bind) running `sleep` from busybox.
//
//   - image=present: after a warm-up pod has pulled the image, 100 pods created at
//     the paced interval, then 100 created at once; for each pod the time from its
//     create returning to the watch delivering phase Running.
//   - image=pulled: a fresh node and image store; 100 pods, each with an image of its
//     own (its one layer differs), so every pod pulls and unpacks its image.
//   - resources: plinthd's CPU (cores over the window) and memory (VmRSS max, RssAnon)
//     with 0, 50 and 110 running pods, after 10 s to settle; the shims' memory beside
//     it (each container has one; they are not plinthd's RSS).
//
// Every pod is deleted at the end of its run and the benchmark waits until plinthd
// confirmed the deletions, runc knows no container, and no mount or pod cgroup is
// left. PLINTH_BENCH_PROFILE_DIR, when set, receives CPU profiles of plinthd during
// the paced starts and at 110 pods, its heap and goroutines at 110 pods, and its logs.
func BenchmarkPodsOnOneNode(b *testing.B) {
	benchBinaries(b)
	ctx := context.Background()
	b.Logf("load average at start: %s", loadAverage())
	control := startControlProcess(b, "--cluster-cidr", "10.244.0.0/16")
	client, err := control.client()
	if err != nil {
		b.Fatal(err)
	}
	reg := imagetest.NewRegistry(b)
	image := reg.PushBusybox(b, "bench/busybox:v1")

	b.Run("image=present", func(b *testing.B) {
		node := startPodNode(b, control, "pods-present")
		node.waitReady(ctx, b, client)
		warmUp(ctx, b, client, node, image)
		interval := podBenchInterval(b)
		var profiles sync.WaitGroup
		if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" {
			seconds := max(10, int((time.Duration(podBenchCount) * interval).Seconds()))
			profiles.Go(func() {
				fetchProfile(b, node.profiling, fmt.Sprintf("profile?seconds=%d", seconds), filepath.Join(dir, "plinthd-cpu-starts.pprof"))
			})
		}
		paced := startPods(ctx, b, client, node, benchPods(node.name, "paced", podBenchCount, func(int) string { return image }), interval)
		profiles.Wait()
		paced.report(b, "paced")
		deleteBenchPods(ctx, b, client, node)

		burst := startPods(ctx, b, client, node, benchPods(node.name, "burst", podBenchCount, func(int) string { return image }), 0)
		burst.report(b, "burst")
		deleteBenchPods(ctx, b, client, node)
	})

	b.Run("image=pulled", func(b *testing.B) {
		// One image per pod, each with a file of its own in its one layer, so no pod
		// finds its layer already unpacked by another.
		images := make([]string, podBenchCount)
		for i := range images {
			img := imagetest.BusyboxWithFiles(b, []imagetest.File{{Name: "etc/bench-pod", Mode: 0o644, Body: []byte(strconv.Itoa(i))}})
			images[i] = reg.Push(b, fmt.Sprintf("bench/pull-%03d:v1", i), img)
		}
		node := startPodNode(b, control, "pods-pulled")
		node.waitReady(ctx, b, client)
		manifests, blobs := reg.ManifestGets.Load(), reg.BlobGets.Load()
		run := startPods(ctx, b, client, node, benchPods(node.name, "pull", podBenchCount, func(i int) string { return images[i] }), podBenchInterval(b))
		b.Logf("registry: %d manifest and %d blob downloads for %d pods (one config and one layer each)",
			reg.ManifestGets.Load()-manifests, reg.BlobGets.Load()-blobs, podBenchCount)
		run.report(b, "pull")
		deleteBenchPods(ctx, b, client, node)
	})

	b.Run("resources", func(b *testing.B) {
		node := startPodNode(b, control, "pods-resources")
		node.waitReady(ctx, b, client)
		warmUp(ctx, b, client, node, image)
		window := podBenchWindow(b)
		created := 0
		for _, want := range []int{0, 50, 110} {
			if want > created {
				run := startPods(ctx, b, client, node, benchPods(node.name, fmt.Sprintf("r%d", want), want-created, func(int) string { return image }), 0)
				b.Logf("%d more pods at once: bind to Running p50 %s, p99 %s", want-created, ms(run.p(0.5)), ms(run.p(0.99)))
				created = want
			}
			time.Sleep(10 * time.Second)
			var profiles sync.WaitGroup
			if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" && want == 110 {
				profiles.Go(func() {
					fetchProfile(b, node.profiling, fmt.Sprintf("profile?seconds=%d", int(window.Seconds())), filepath.Join(dir, "plinthd-cpu-110.pprof"))
				})
			}
			s := measureNode(b, node, window)
			profiles.Wait()
			if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" && want == 110 {
				fetchProfile(b, node.profiling, "heap", filepath.Join(dir, "plinthd-heap-110.pprof"))
				fetchProfile(b, node.profiling, "goroutine?debug=1", filepath.Join(dir, "plinthd-goroutines-110.txt"))
			}
			s.report(b, want)
		}
		deleteBenchPods(ctx, b, client, node)
	})
}

// benchPods returns count pods bound to node, named prefix-NNN, running sleep from
// image(i), with a 1 s grace period (sleep as the container's init ignores SIGTERM).
func benchPods(node, prefix string, count int, image func(i int) string) []*corev1.Pod {
	grace := int64(1)
	pods := make([]*corev1.Pod, count)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", prefix, i), Namespace: podBenchNamespace,
				Labels: map[string]string{podBenchLabel: node}},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "sleep", Image: image(i), ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sleep", "3600"}}},
			},
		}
	}
	return pods
}

// warmUp runs one pod to Running and deletes it: the image is then in the store and
// the pod runtime is built.
func warmUp(ctx context.Context, b *testing.B, client kubernetes.Interface, node *podBenchNode, image string) {
	b.Helper()
	run := startPods(ctx, b, client, node, benchPods(node.name, "warmup", 1, func(int) string { return image }), 0)
	b.Logf("warm-up pod (pulls the image): bind to Running %s", ms(run.p(1)))
	deleteBenchPods(ctx, b, client, node)
}

// startRun is what one run of pod starts measured.
type startRun struct {
	load string // 1-minute load average at the start and end
	// latencies: create returned → the watch delivered phase Running, sorted.
	latencies []time.Duration
	// creates: the create requests' own durations, sorted.
	creates []time.Duration
	// startedAt: the container's status startedAt − the pod's creationTimestamp, both
	// in whole seconds as the API carries them, sorted.
	startedAt []time.Duration
	took      time.Duration
	// nodeMeans is plinthd's own account of the run: the mean of each of its
	// nodeHistograms over the run's observations.
	nodeMeans string
}

func (r startRun) p(q float64) time.Duration { return nodesim.Percentile(r.latencies, q) }

func (r startRun) report(b *testing.B, name string) {
	b.Logf("%s, %d pods over %s, load %s: bind to Running p50 %s, p99 %s, max %s; create request p50 %s, p99 %s; container startedAt − creationTimestamp (1 s resolution) p50 %s, p99 %s",
		name, len(r.latencies), r.took.Round(100*time.Millisecond), r.load, ms(r.p(0.5)), ms(r.p(0.99)), ms(r.p(1)),
		ms(nodesim.Percentile(r.creates, 0.5)), ms(nodesim.Percentile(r.creates, 0.99)),
		nodesim.Percentile(r.startedAt, 0.5), nodesim.Percentile(r.startedAt, 0.99))
	b.Logf("%s, plinthd's means: %s", name, r.nodeMeans)
	b.ReportMetric(msf(r.p(0.5)), name+"-p50-ms")
	b.ReportMetric(msf(r.p(0.99)), name+"-p99-ms")
	b.ReportMetric(msf(r.p(1)), name+"-max-ms")
}

type createResult struct {
	name           string
	sent, returned time.Time
	err            error
}

// startPods creates pods, the i-th at start + i×interval (all at once for 0), and
// waits until the watch has delivered each one Running.
func startPods(ctx context.Context, b *testing.B, client kubernetes.Interface, node *podBenchNode, pods []*corev1.Pod, interval time.Duration) startRun {
	b.Helper()
	api := client.CoreV1().Pods(podBenchNamespace)
	selector := podBenchLabel + "=" + node.name
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		b.Fatal(err)
	}
	rv := list.ResourceVersion
	w, err := api.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Stop() }()

	run := startRun{load: loadAverage()}
	before := node.histograms(b, nodeHistograms...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	created := make(chan createResult, len(pods))
	var creators sync.WaitGroup
	defer creators.Wait() // after cancel (defers run last first)
	start := time.Now()
	for i, p := range pods {
		creators.Go(func() {
			t := time.NewTimer(time.Until(start.Add(time.Duration(i) * interval)))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
			sent := time.Now()
			_, err := api.Create(ctx, p, metav1.CreateOptions{})
			created <- createResult{name: p.Name, sent: sent, returned: time.Now(), err: err}
		})
	}

	returned := map[string]time.Time{}
	running := map[string]*corev1.Pod{}
	runningAt := map[string]time.Time{}
	deadline := time.After(podStartTimeout + time.Duration(len(pods))*interval)
	for len(running) < len(pods) || len(returned) < len(pods) {
		select {
		case r := <-created:
			if r.err != nil {
				b.Fatalf("create pod %s: %v", r.name, r.err)
			}
			returned[r.name] = r.returned
			run.creates = append(run.creates, r.returned.Sub(r.sent))
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The server ended the watch; resume from the last version seen.
				if w, err = api.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv}); err != nil {
					b.Fatalf("watch pods again from %s: %v", rv, err)
				}
				continue
			}
			if ev.Type == watch.Error {
				b.Fatalf("pod watch: %v", ev.Object)
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			rv = p.ResourceVersion
			if _, seen := running[p.Name]; !seen && p.Status.Phase == corev1.PodRunning {
				running[p.Name], runningAt[p.Name] = p, now
			}
		case <-deadline:
			var missing []string
			for _, p := range pods {
				if running[p.Name] == nil {
					missing = append(missing, p.Name)
				}
			}
			b.Fatalf("%d of %d pods not Running within %s: %v\n%s", len(missing), len(pods), podStartTimeout, missing, tailFile(node.log, 30))
		}
	}
	run.took = time.Since(start)
	for name, at := range runningAt {
		run.latencies = append(run.latencies, at.Sub(returned[name]))
		p := running[name]
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				run.startedAt = append(run.startedAt, cs.State.Running.StartedAt.Sub(p.CreationTimestamp.Time))
			}
		}
	}
	for _, s := range [][]time.Duration{run.latencies, run.creates, run.startedAt} {
		slices.Sort(s)
	}
	run.load += " → " + loadAverage()
	run.nodeMeans = meansSince(before, node.histograms(b, nodeHistograms...))
	return run
}

// nodeHistograms are plinthd's metrics that break a pod's start down: from first
// seen to Running, and each runtime operation.
var nodeHistograms = []string{"plinth_pod_start_duration_seconds", "plinth_runtime_operations_duration_seconds"}

// meansSince formats, for each series that grew from before to after, its mean
// over the observations in between.
func meansSince(before, after map[string]histogramTotals) string {
	var out []string
	for series, a := range after {
		bt := before[series]
		if n := a.count - bt.count; n > 0 {
			name := strings.TrimPrefix(strings.TrimPrefix(series, "plinth_"), "runtime_operations_duration_seconds")
			out = append(out, fmt.Sprintf("%s %s (%.0f)", name, ms(time.Duration((a.sum-bt.sum)/n*float64(time.Second))), n))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// deleteBenchPods deletes the node's benchmark pods and waits until plinthd has
// confirmed every deletion (it does so once a pod's containers are gone), runc knows
// no container, and no mount or pod cgroup of the node is left.
func deleteBenchPods(ctx context.Context, b *testing.B, client kubernetes.Interface, node *podBenchNode) {
	b.Helper()
	api := client.CoreV1().Pods(podBenchNamespace)
	selector := podBenchLabel + "=" + node.name
	list, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range list.Items {
		if err := api.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatalf("delete pod %s: %v", p.Name, err)
		}
	}
	started := time.Now()
	deadline := started.Add(2 * time.Minute)
	for {
		left, err := api.List(ctx, metav1.ListOptions{LabelSelector: selector})
		ids, cerr := node.containers()
		if err == nil && cerr == nil && len(left.Items) == 0 && len(ids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d pods deleted: after 2 minutes %v pods left in the API (%v), containers %v (%v):\n%s",
				len(list.Items), len(left.Items), err, ids, cerr, tailFile(node.log, 30))
		}
		time.Sleep(250 * time.Millisecond)
	}
	var mounts []string
	for _, dir := range []string{node.runtimeDir, node.stateDir} {
		mounts = append(mounts, mountsUnder(b, dir)...)
	}
	if len(mounts) > 0 {
		b.Errorf("after deleting every pod, %d mounts are left: %v", len(mounts), mounts)
	}
	if cgs := node.podCgroups(); len(cgs) > 0 {
		b.Errorf("after deleting every pod, %d pod cgroups are left: %v", len(cgs), cgs)
	}
	b.Logf("%d pods deleted and their containers, mounts and cgroups gone after %s", len(list.Items), time.Since(started).Round(100*time.Millisecond))
}

// nodeResources is what one steady-state window measured.
type nodeResources struct {
	load                       string
	window                     time.Duration
	cores                      float64
	rssMaxKiB, anonKiB, hwmKiB int64
	shims                      int
	shimRSSKiB, shimPSSKiB     int64
	runQueueWait               time.Duration
	goRuntime                  string
}

// measureNode samples plinthd's CPU time and memory over window.
func measureNode(b *testing.B, node *podBenchNode, window time.Duration) nodeResources {
	b.Helper()
	pid := node.pid()
	r := nodeResources{load: loadAverage()}
	cpuStart, err := cpuTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	waitStart := runQueueWait(pid)
	start := time.Now()
	for time.Since(start) < window {
		time.Sleep(time.Second)
		if rss, err := memoryKiB(pid, "VmRSS"); err == nil && rss > r.rssMaxKiB {
			r.rssMaxKiB = rss
			r.anonKiB, _ = memoryKiB(pid, "RssAnon")
		}
	}
	r.window = time.Since(start)
	cpuEnd, err := cpuTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	r.runQueueWait = runQueueWait(pid) - waitStart
	r.cores = (cpuEnd - cpuStart).Seconds() / r.window.Seconds()
	r.hwmKiB, _ = memoryKiB(pid, "VmHWM")
	r.shims, r.shimRSSKiB, r.shimPSSKiB = node.shimMemory()
	r.goRuntime = node.metrics("go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes")
	r.load += " → " + loadAverage()
	return r
}

func (r nodeResources) report(b *testing.B, pods int) {
	b.Logf("%d pods, window %s, load %s: plinthd %.3f cores (its threads waited %.2f s for a CPU), RSS max %.1f MiB (%.1f MiB anonymous), peak over the run %.1f MiB; %d shims: RSS %.1f MiB summed, PSS %.1f MiB; plinthd's Go runtime: %s",
		pods, r.window.Round(time.Second), r.load, r.cores, r.runQueueWait.Seconds(), float64(r.rssMaxKiB)/1024, float64(r.anonKiB)/1024,
		float64(r.hwmKiB)/1024, r.shims, float64(r.shimRSSKiB)/1024, float64(r.shimPSSKiB)/1024, r.goRuntime)
	prefix := fmt.Sprintf("pods%d-", pods)
	b.ReportMetric(r.cores, prefix+"cores")
	b.ReportMetric(float64(r.rssMaxKiB)/1024, prefix+"rss-MiB")
	b.ReportMetric(float64(r.anonKiB)/1024, prefix+"anon-MiB")
	b.ReportMetric(float64(r.shimPSSKiB)/1024, prefix+"shims-pss-MiB")
}
