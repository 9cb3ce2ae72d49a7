package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/plinth/plinth/test/nodesim"
)

const (
	// fleetGrace is --node-monitor-grace-period: the Lease duration (40 s) rather than
	// the default 50 s, to keep the run short. It still allows three missed renewals.
	fleetGrace = 40 * time.Second
	// fleetWindow is how long the steady state is measured.
	fleetWindow = 60 * time.Second
)

// fleetSizes are 1,000 and 5,000 nodes, or PLINTH_BENCH_NODES (comma-separated).
func fleetSizes(b *testing.B) []int {
	env := os.Getenv("PLINTH_BENCH_NODES")
	if env == "" {
		return []int{1000, 5000}
	}
	var out []int
	for _, s := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			b.Fatalf("PLINTH_BENCH_NODES: %q is not a node count of at least 10", s)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkNodeFleet runs plinth-control as its own process (embedded etcd, TLS) and
// the node simulator in this one: each simulated node is plinthd's node agent with its
// own client certificate and connection, registering its Node, renewing its Lease every
// 10 s (40 s lease; starts spread over 10 s) and checking its status every 10 s. For
// each fleet size it reports, over a 60 s steady-state window, the control service's
// CPU (cores) and RSS from /proc and the Lease update latency the nodes see; then it
// stops a sample of nodes, each right after a heartbeat, and reports the error between
// when the control service marks each Ready=Unknown (seen through a watch) and the
// node's stop plus the grace period.
//
// PLINTH_BENCH_PROFILE_DIR, when set, receives a 30 s CPU profile and a heap profile of
// plinth-control from the window.
func BenchmarkNodeFleet(b *testing.B) {
	for _, n := range fleetSizes(b) {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchFleet(b, n, plinthTarget(b, "--node-monitor-grace-period", fleetGrace.String()))
		})
	}
}

// benchFleet drives target with size simulated nodes and reports what BenchmarkNodeFleet
// describes.
func benchFleet(b *testing.B, size int, target *fleetTarget) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Logf("load average at start: %s", loadAverage())
	admin := target.admin
	warnings := slog.New(slog.NewTextHandler(io.Discard, nil))
	if !testing.Verbose() {
		// client-go logs every request a stopping node abandons.
		// With its output redirected, klog still copies errors to stderr; a discarding
		// logger takes everything.
		klog.SetLogger(logr.Discard())
	} else {
		warnings = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	sim, err := nodesim.New(nodesim.Options{
		Credentials: target.credentials(),
		Seed:        uint64(size), Logger: warnings,
		// A fleet does not boot within one renew interval: registration (five
		// requests a node) is spread at 100 nodes/s. Heartbeats stay evenly spread
		// over the 10 s renew interval either way.
		StartSpread: max(10*time.Second, time.Duration(size)*10*time.Millisecond),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Stop()
	names := make([]string, size)
	for i := range names {
		names[i] = fmt.Sprintf("sim-%05d", i)
	}
	b.ResetTimer()
	started := time.Now()
	nodes, err := sim.Start(ctx, names...)
	if err != nil {
		b.Fatal(err)
	}
	waitFleetReady(b, admin, nodes, 5*time.Minute)
	b.Logf("%d nodes registered and heartbeating after %s", size, time.Since(started).Round(time.Second))

	// Steady state: one renewal round to settle, then the window.
	time.Sleep(10 * time.Second)
	// The simulator's own garbage collector is held off for the window (see
	// holdSimulatorGC): its mark phases stall the simulated nodes' goroutines, which
	// would count as the control service's latency.
	releaseGC := holdSimulatorGC(b)
	sim.Recorder().Reset()
	loadStart := loadAverage()
	cpuStarts, err := target.cpuTimes()
	if err != nil {
		b.Fatal(err)
	}
	simCPUStart, _ := cpuTime(0)
	waitStart := target.runQueueWait()
	serverStart := target.leaseUpdateBuckets(ctx)
	var profiles sync.WaitGroup
	if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" {
		profiles.Go(func() {
			target.fetchProfile(b, "profile?seconds=30", filepath.Join(dir, fmt.Sprintf("control-cpu-%d.pprof", size)))
		})
	}
	windowStart := time.Now()
	var maxRSS, anonAtMax int64
	for time.Since(windowStart) < fleetWindow {
		time.Sleep(time.Second)
		if rss, err := target.memoryKiB("VmRSS"); err == nil && rss > maxRSS {
			maxRSS = rss
			anonAtMax, _ = target.memoryKiB("RssAnon")
		}
	}
	window := time.Since(windowStart)
	// What the window saw is taken before the simulator's collector is released: its
	// first collection then marks the whole grown heap, which would land in the
	// latencies of requests answered after the window.
	lease := sim.Recorder().Summary(nodesim.LeaseUpdate)
	nodeGet := sim.Recorder().Summary(nodesim.NodeGet)
	cpuEnds, err := target.cpuTimes()
	if err != nil {
		b.Fatal(err)
	}
	simCPUEnd, _ := cpuTime(0)
	waited := target.runQueueWait() - waitStart
	serverSide := target.leaseUpdateBuckets(ctx).since(serverStart)
	releaseGC()
	goMemory := runtimeMetrics(ctx, admin, "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_next_gc_bytes")
	loadEnd := loadAverage()
	profiles.Wait()
	if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" {
		target.fetchProfile(b, "heap", filepath.Join(dir, fmt.Sprintf("control-heap-%d.pprof", size)))
		writeOwnHeapProfile(b, filepath.Join(dir, fmt.Sprintf("simulator-heap-%d.pprof", size)))
	}

	detection := measureDetection(ctx, b, admin, nodes, max(20, size/100))
	peakRSS, _ := target.memoryKiB("VmHWM")
	if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" {
		target.copyLogs(dir, size)
	}
	b.StopTimer()

	var cpuUsed time.Duration
	for i := range cpuEnds {
		cpuUsed += cpuEnds[i] - cpuStarts[i]
	}
	cores := cpuUsed.Seconds() / window.Seconds()
	simCores := (simCPUEnd - simCPUStart).Seconds() / window.Seconds()
	b.Logf("window %s, load average %s -> %s: %s %.2f cores%s, RSS max %d MiB (%d MiB anonymous, the rest mostly etcd's mapped database; peak over the run %d MiB); simulator %.2f cores",
		window.Round(time.Second), loadStart, loadEnd, target.name, cores, target.describeCPU(cpuStarts, cpuEnds, window),
		maxRSS/1024, anonAtMax/1024, peakRSS/1024, simCores)
	b.Logf("the control plane's threads waited %.1f s for a CPU during the window (runnable, not running; %.2f s per second of CPU they got)",
		waited.Seconds(), waited.Seconds()/max(cpuUsed.Seconds(), 0.001))
	b.Logf("the API server's Go runtime at the window's end: %s", goMemory)
	b.Logf("Lease updates: %d (%.0f/s), %d failed (%d of them 429, retried by the client), p50 %s, p99 %s, max %s; Node reads: %d, %d failed (%d 429), p99 %s",
		lease.Count, float64(lease.Count)/window.Seconds(), lease.Failures, lease.Throttled, ms(lease.P50), ms(lease.P99), ms(lease.Max),
		nodeGet.Count, nodeGet.Failures, nodeGet.Throttled, ms(nodeGet.P99))
	b.Logf("Lease updates as the API server timed them (handler only): %s", serverSide)
	b.Logf("detection of %d stopped nodes: error against stop + %s: %s; against last renewal seen + %s: %s; %d not marked; %d running nodes wrongly marked; watches ended by the server and resumed: %d",
		detection.stopped, fleetGrace, detection.vsStop, fleetGrace, detection.vsRenewal, detection.unmarked, detection.falseUnknown, detection.resumed)
	b.ReportMetric(cores, "control-cores")
	b.ReportMetric(waited.Seconds()/window.Seconds(), "control-runqueue-wait-s/s")
	b.ReportMetric(float64(maxRSS)/1024, "control-rss-MiB")
	b.ReportMetric(float64(anonAtMax)/1024, "control-anon-MiB")
	b.ReportMetric(float64(lease.Count)/window.Seconds(), "lease-updates/s")
	b.ReportMetric(msf(lease.P50), "lease-p50-ms")
	b.ReportMetric(msf(lease.P99), "lease-p99-ms")
	b.ReportMetric(100*serverSide.fractionWithin(0.05), "lease-server-within-50ms-%")
	b.ReportMetric(float64(lease.Failures), "lease-failures")
	b.ReportMetric(float64(lease.Throttled), "lease-429s")
	b.ReportMetric(msf(detection.vsStop.p50), "detect-err-p50-ms")
	b.ReportMetric(msf(detection.vsStop.maxAbs), "detect-abs-err-max-ms")
	b.ReportMetric(msf(detection.vsRenewal.maxAbs), "detect-renewal-abs-err-max-ms")
	b.ReportMetric(float64(detection.unmarked+detection.falseUnknown), "detect-wrong")
}

// waitFleetReady waits until every node has heartbeaten and the API lists them all
// with Ready=True.
func waitFleetReady(b *testing.B, admin kubernetes.Interface, nodes []*nodesim.Node, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		beating := 0
		for _, n := range nodes {
			if !n.LastHeartbeat().IsZero() {
				beating++
			}
		}
		ready := 0
		if beating == len(nodes) {
			list, err := admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if err == nil {
				for i := range list.Items {
					if readyStatus(&list.Items[i]) == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == len(nodes) {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s: %d of %d nodes heartbeating, %d Ready", timeout, beating, len(nodes), ready)
		}
		time.Sleep(2 * time.Second)
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// errorStats summarise detection errors.
type errorStats struct {
	p50, min, max, maxAbs time.Duration
}

func summarise(errs []time.Duration) errorStats {
	if len(errs) == 0 {
		return errorStats{}
	}
	slices.Sort(errs)
	return errorStats{p50: nodesim.Percentile(errs, 0.5), min: errs[0], max: errs[len(errs)-1],
		maxAbs: max(errs[len(errs)-1], -errs[0])}
}

func (e errorStats) String() string {
	return fmt.Sprintf("p50 %s, min %s, max %s", ms(e.p50), ms(e.min), ms(e.max))
}

type detectionResult struct {
	stopped, unmarked, falseUnknown int
	// resumed counts watches the server ended and the benchmark reopened.
	resumed int
	// vsStop: mark - (stop + grace), the stop being when the node's last heartbeat got
	// its response. vsRenewal: mark - (last renewal + grace), the renewal as this
	// process saw it through a watch of the Leases, the way the controller sees it.
	vsStop, vsRenewal errorStats
}

// measureDetection stops sample random nodes, each at its next heartbeat, and watches
// Nodes for their Ready=Unknown marks and Leases for their renewals. Each mark's error
// is taken against the stop plus the grace period, and against the last renewal seen
// plus the grace period. The first includes how late the node itself got its last
// response (on a busy machine, up to a second after the control service had it); the
// second shares the controller's view of the heartbeat and so measures the controller.
// Running nodes marked Unknown are counted too.
func measureDetection(ctx context.Context, b *testing.B, admin kubernetes.Interface, nodes []*nodesim.Node, sample int) detectionResult {
	b.Helper()
	nodeList, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	nodeWatch := openResumingWatch(b, "node", nodeList.ResourceVersion, func(rv string) (watch.Interface, error) {
		return admin.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	})
	defer nodeWatch.stop()
	leases := admin.CoordinationV1().Leases("kube-node-lease")
	leaseList, err := leases.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	leaseWatch := openResumingWatch(b, "lease", leaseList.ResourceVersion, func(rv string) (watch.Interface, error) {
		return leases.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	})
	defer leaseWatch.stop()

	rng := rand.New(rand.NewPCG(uint64(len(nodes)), 7))
	chosen := map[string]*nodesim.Node{}
	for _, i := range rng.Perm(len(nodes))[:sample] {
		chosen[nodes[i].Name] = nodes[i]
		nodes[i].StopAtNextHeartbeat()
	}
	marked := map[string]time.Time{}
	renewed := map[string]time.Time{}
	falseUnknown := map[string]bool{}
	// Every chosen node stops within one renew interval; its mark is due a grace
	// period after that.
	deadline := time.After(10*time.Second + fleetGrace + 30*time.Second)
watching:
	for len(marked) < len(chosen) {
		select {
		case ev, ok := <-leaseWatch.events():
			if !leaseWatch.delivered(ev, ok) {
				continue
			}
			if l, ok := ev.Object.(*coordinationv1.Lease); ok && chosen[l.Name] != nil && ev.Type != watch.Deleted {
				renewed[l.Name] = time.Now()
			}
		case ev, ok := <-nodeWatch.events():
			if !nodeWatch.delivered(ev, ok) {
				continue
			}
			if ev.Type != watch.Modified {
				continue
			}
			n, ok := ev.Object.(*corev1.Node)
			if !ok || readyStatus(n) != corev1.ConditionUnknown {
				continue
			}
			if _, ok := chosen[n.Name]; !ok {
				falseUnknown[n.Name] = true
				continue
			}
			if _, seen := marked[n.Name]; !seen {
				marked[n.Name] = time.Now()
			}
		case <-deadline:
			break watching
		}
	}
	var vsStop, vsRenewal []time.Duration
	for name, at := range marked {
		stopped := chosen[name].StoppedAt()
		if stopped.IsZero() {
			b.Fatalf("node %s marked Unknown but never stopped", name)
		}
		vsStop = append(vsStop, at.Sub(stopped.Add(fleetGrace)))
		line := fmt.Sprintf("%s stopped %s, marked Unknown %s: error %s", name, stopped.Format("15:04:05.000"), at.Format("15:04:05.000"), ms(at.Sub(stopped.Add(fleetGrace))))
		if r, ok := renewed[name]; ok {
			vsRenewal = append(vsRenewal, at.Sub(r.Add(fleetGrace)))
			line += fmt.Sprintf("; last renewal seen %s: error %s", r.Format("15:04:05.000"), ms(at.Sub(r.Add(fleetGrace))))
		}
		if testing.Verbose() {
			b.Log(line)
		}
	}
	return detectionResult{stopped: len(chosen), unmarked: len(chosen) - len(marked), falseUnknown: len(falseUnknown),
		resumed: nodeWatch.resumed + leaseWatch.resumed,
		vsStop:  summarise(vsStop), vsRenewal: summarise(vsRenewal)}
}

// fetchProfile writes /debug/pprof/<what> served on addr to out.
func fetchProfile(b *testing.B, addr, what, out string) {
	data, err := pprofOverHTTP(context.Background(), addr, what)
	saveProfile(b, what, out, data, err)
}

// pprofOverHTTP fetches /debug/pprof/<what> from a plain HTTP profiling listener.
func pprofOverHTTP(ctx context.Context, addr, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+what, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// saveProfile writes a fetched profile to out; failures are logged, not fatal, since
// profiles are extras.
func saveProfile(b *testing.B, what, out string, data []byte, err error) {
	if err == nil {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		b.Logf("profile %s: %v", what, err)
	}
}

func ms(d time.Duration) string   { return d.Round(100 * time.Microsecond).String() }
func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runtimeMetrics reads the named unlabelled samples from the control service's /metrics,
// formatted for the log (bytes in MiB).
func runtimeMetrics(ctx context.Context, admin kubernetes.Interface, names ...string) string {
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	return pickMetrics(string(raw), names...)
}

// pickMetrics picks the named unlabelled samples from a Prometheus text exposition,
// formatted for the log (bytes in MiB).
func pickMetrics(exposition string, names ...string) string {
	var out []string
	for _, line := range strings.Split(exposition, "\n") {
		for _, name := range names {
			v, ok := strings.CutPrefix(line, name+" ")
			if !ok {
				continue
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil && strings.HasSuffix(name, "_bytes") {
				v = fmt.Sprintf("%.0f MiB", f/(1<<20))
			}
			out = append(out, name+"="+v)
		}
	}
	return strings.Join(out, " ")
}

// histogram is one series of a Prometheus histogram: cumulative counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// parseHistogram picks the series of name whose labels include selector.
func parseHistogram(exposition, name, selector string) histogram {
	var h histogram
	for _, line := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(line, name+"_bucket{")
		if !ok || !strings.Contains(rest, selector) {
			continue
		}
		_, le, ok := strings.Cut(rest, `le="`)
		if !ok {
			continue
		}
		bound, value, ok := strings.Cut(le, `"} `)
		if !ok {
			continue
		}
		count, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		if bound == "+Inf" {
			h.total = count
			continue
		}
		f, err := strconv.ParseFloat(bound, 64)
		if err != nil {
			continue
		}
		h.bounds = append(h.bounds, f)
		h.counts = append(h.counts, count)
	}
	return h
}

// since is what h counted after earlier.
func (h histogram) since(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), total: h.total - earlier.total}
	if len(earlier.counts) == len(h.counts) {
		for i := range out.counts {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

// fractionWithin is the share of observations at or under bound (which must be one of
// the histogram's bounds); 0 when there are none.
func (h histogram) fractionWithin(bound float64) float64 {
	i := slices.Index(h.bounds, bound)
	if i < 0 || h.total == 0 {
		return 0
	}
	return h.counts[i] / h.total
}

func (h histogram) String() string {
	if h.total == 0 {
		return "none recorded"
	}
	var parts []string
	for _, b := range []float64{0.005, 0.025, 0.05, 0.1, 0.2} {
		parts = append(parts, fmt.Sprintf("%.2f%% within %gms", 100*h.fractionWithin(b), b*1000))
	}
	return fmt.Sprintf("%.0f requests, %s", h.total, strings.Join(parts, ", "))
}

// writeOwnHeapProfile writes this process's heap profile: the simulator's.
func writeOwnHeapProfile(b *testing.B, out string) {
	f, err := os.Create(out)
	if err != nil {
		b.Logf("simulator heap profile: %v", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Logf("simulator heap profile: %v", err)
	}
}

// holdSimulatorGC stops this process's garbage collector (after one collection, so
// the window starts clean) until the returned func is called, unless
// PLINTH_BENCH_SIM_GC=on. Five thousand simulated nodes keep a few hundred MiB of
// client state (TLS, HTTP/2, client-go) in one heap, where real nodes keep a few MiB
// each in their own processes: its collections took 0.6–1.2 s of marking every 10–15 s
// on these two cores, and the requests in flight then were measured hundreds of
// milliseconds late. The held-off heap grows by the window's allocations (1.3 GiB
// at 5,000 nodes); the control service's collector is untouched.
func holdSimulatorGC(b *testing.B) (release func()) {
	if os.Getenv("PLINTH_BENCH_SIM_GC") == "on" {
		b.Logf("the simulator's garbage collector runs during the window (PLINTH_BENCH_SIM_GC=on)")
		return func() {}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	previous := debug.SetGCPercent(-1)
	return func() {
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		debug.SetGCPercent(previous)
		b.Logf("the simulator's garbage collector was held off for the window: %d collections, heap %d -> %d MiB",
			after.NumGC-before.NumGC, before.HeapAlloc>>20, after.HeapAlloc>>20)
	}
}

// resumingWatch is a watch that, when the server ends it, reopens from the last
// resource version it delivered, as an informer would. kube-apiserver ends a watch
// whose client falls behind its buffer (the benchmark's watch of every Lease receives
// 500 events a second at 5,000 nodes).
type resumingWatch struct {
	b       *testing.B
	what    string
	open    func(resourceVersion string) (watch.Interface, error)
	w       watch.Interface
	rv      string
	resumed int
}

func openResumingWatch(b *testing.B, what, resourceVersion string, open func(string) (watch.Interface, error)) *resumingWatch {
	b.Helper()
	r := &resumingWatch{b: b, what: what, open: open, rv: resourceVersion}
	r.reopen()
	return r
}

func (r *resumingWatch) reopen() {
	w, err := r.open(r.rv)
	if err != nil {
		r.b.Fatalf("%s watch from resourceVersion %s: %v", r.what, r.rv, err)
	}
	r.w = w
}

func (r *resumingWatch) events() <-chan watch.Event { return r.w.ResultChan() }

func (r *resumingWatch) stop() { r.w.Stop() }

// delivered takes what the result channel gave: it reports whether ev is an object
// to look at, records its resource version, and reopens the watch if it ended. An
// error event (for example 410 Gone: the version is no longer served) fails the
// benchmark, since events would have been lost.
func (r *resumingWatch) delivered(ev watch.Event, ok bool) bool {
	if !ok {
		r.resumed++
		r.reopen()
		return false
	}
	if ev.Type == watch.Error {
		r.b.Fatalf("%s watch: %v", r.what, apierrors.FromObject(ev.Object))
	}
	if obj, err := meta.Accessor(ev.Object); err == nil {
		r.rv = obj.GetResourceVersion()
	}
	return true
}
