package pressure

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/oomwatch"
	"github.com/plinth/plinth/bpf/reclaim"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// kubeletPeriod is kubelet's housekeeping period for eviction signals, the baseline's
// sampling cadence.
const kubeletPeriod = 10 * time.Second

// percentile is the nearest-rank percentile of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func reportDurations(b *testing.B, name string, ds []time.Duration) {
	b.ReportMetric(percentile(ds, 0.5).Seconds(), name+"-p50-s")
	b.ReportMetric(percentile(ds, 0.95).Seconds(), name+"-p95-s")
	b.ReportMetric(percentile(ds, 1).Seconds(), name+"-max-s")
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Round(time.Millisecond).String())
	}
	b.Logf("%s (%d runs, sorted): %s", name, len(ds), strings.Join(parts, " "))
}

// pollingSampler reads the same signal as plinthd (allocatableMemory.available of the
// pods cgroup, through the same reader) only every period, like kubelet's
// housekeeping, and reports the first sample that finds the threshold crossed.
type pollingSampler struct {
	signals *pressuresignals.Signals
	target  int64
}

func newPollingSampler(tb testing.TB, podsCgroup string, target int64) *pollingSampler {
	tb.Helper()
	s, err := pressuresignals.New(pressuresignals.Options{PodsCgroup: podsCgroup, Logger: testLogger(tb)},
		pressuresignals.Deps{Host: pressuresignals.HostFiles()})
	if err != nil {
		tb.Fatal(err)
	}
	return &pollingSampler{signals: s, target: target}
}

// crossed takes one sample.
func (p *pollingSampler) crossed() bool {
	obs, err := p.signals.Observe(context.Background())
	if err != nil {
		return false
	}
	s, ok := obs.Samples()[pressure.SignalAllocatableMemoryAvailable]
	return ok && s.Available < p.target
}

// watchCrossing polls the pods cgroup every 2 ms from now on and sends when its
// allocatable memory (limit minus working set, as plinthd computes it) first drops
// below target: the moment detection can start from, whatever the hog's own speed.
func watchCrossing(ctx context.Context, tb testing.TB, cg *cgrouptest.Cgroup, target int64) <-chan time.Time {
	out := make(chan time.Time, 1)
	host := cg.Host()
	go func() {
		for ctx.Err() == nil {
			m, err := host.Memory(cg.Path())
			if err == nil && int64(m.LimitBytes)-int64(m.WorkingSetBytes) < target {
				out <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return out
}

func crossedAt(tb testing.TB, ch <-chan time.Time) time.Time {
	tb.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(30 * time.Second):
		tb.Fatal("the pods cgroup never crossed the threshold")
		return time.Time{}
	}
}

// BenchmarkMemoryPressureDetection measures, per run, the time from the start of a
// memory hog (450 MiB at up to 1 GiB/s in a 512 MiB pods cgroup, threshold
// allocatableMemory.available<100Mi) to MemoryPressure=True in the API: for the real
// plinthd, and for a baseline that samples the same signal every 10 s and posts the
// condition on a Node of its own. Each run starts the hog at a random phase of the
// baseline's period. Both are also reported from the moment the cgroup crossed the
// threshold, since the hog itself needs a while to fill 450 MiB. Run with -benchtime
// 10x or more.
func BenchmarkMemoryPressureDetection(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.PSI, cgrouptest.Cgroups)
	cg := cgrouptest.New(b, cgrouptest.Options{MemoryLimit: podsLimit})
	c := startControl(b)
	const node, baselineNode = "pressure-node", "baseline-node"
	startPlinthd(b, c, node, fmt.Sprintf("podsCgroup: %s\nevictionHard:\n  allocatableMemory.available: %s\nevictionPressureTransitionPeriod: 1s\n", cg.Path(), podsThreshold))
	baseline := newBaselineNode(b, c.admin, baselineNode)
	sampler := newPollingSampler(b, cg.Path(), 100<<20)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { baseline.run(ctx, sampler) })
	plinthdWatch := watchCondition(ctx, c.admin, node, corev1.NodeMemoryPressure)
	baselineWatch := watchCondition(ctx, c.admin, baselineNode, corev1.NodeMemoryPressure)

	var plinthdTimes, baselineTimes, plinthdAfter, baselineAfter []time.Duration
	for b.Loop() {
		if _, last, ok := plinthdWatch.waitFor(corev1.ConditionFalse, 30*time.Second); !ok {
			b.Fatalf("plinthd's MemoryPressure not False between runs: %+v", last)
		}
		baseline.reset(b)
		time.Sleep(rand.N(kubeletPeriod))
		plinthdWatch.reset()
		baselineWatch.reset()
		hog := hogCommand(b, fastHogRate, fastHogMiB)
		cctx, ccancel := context.WithCancel(ctx)
		crossing := watchCrossing(cctx, b, cg, 100<<20)
		if err := cg.Start(hog); err != nil {
			b.Fatal(err)
		}
		hogStart := time.Now()
		at, _, ok := plinthdWatch.waitFor(corev1.ConditionTrue, 30*time.Second)
		if !ok {
			b.Fatal("plinthd's MemoryPressure not True within 30s")
		}
		crossed := crossedAt(b, crossing)
		ccancel()
		plinthdTimes = append(plinthdTimes, at.Sub(hogStart))
		plinthdAfter = append(plinthdAfter, at.Sub(crossed))
		at, _, ok = baselineWatch.waitFor(corev1.ConditionTrue, kubeletPeriod+10*time.Second)
		if !ok {
			b.Fatal("baseline's MemoryPressure not True within 20s")
		}
		baselineTimes = append(baselineTimes, at.Sub(hogStart))
		baselineAfter = append(baselineAfter, at.Sub(crossed))
		_ = hog.Process.Kill()
		_ = hog.Wait()
		plinthdWatch.reset()
	}
	reportDurations(b, "plinthd", plinthdTimes)
	reportDurations(b, "baseline-10s", baselineTimes)
	reportDurations(b, "plinthd-after-crossing", plinthdAfter)
	reportDurations(b, "baseline-10s-after-crossing", baselineAfter)
}

// baselineNode is a Node whose MemoryPressure a 10 s sampler posts.
type baselineNode struct {
	client kubernetes.Interface
	name   string
	mu     sync.Mutex
	posted bool
}

func newBaselineNode(tb testing.TB, client kubernetes.Interface, name string) *baselineNode {
	tb.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	bn := &baselineNode{client: client, name: name}
	bn.reset(tb)
	return bn
}

// post writes MemoryPressure with status, and Ready=True so plinth-control's node
// lifecycle controller, which also writes the conditions of a node that never posted
// Ready, leaves it alone. Like kubelet's status update it tries up to 5 times.
func (bn *baselineNode) post(status corev1.ConditionStatus) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for try := 0; try < 5; try++ {
		var n *corev1.Node
		n, err = bn.client.CoreV1().Nodes().Get(ctx, bn.name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: status, Reason: "Baseline", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Baseline", LastHeartbeatTime: now, LastTransitionTime: now},
		}
		if _, err = bn.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err == nil {
			return nil
		}
	}
	return err
}

func (bn *baselineNode) reset(tb testing.TB) {
	tb.Helper()
	bn.mu.Lock()
	defer bn.mu.Unlock()
	if err := bn.post(corev1.ConditionFalse); err != nil {
		tb.Fatal(err)
	}
	bn.posted = false
}

// run samples every kubeletPeriod, free-running like kubelet's housekeeping, and
// posts MemoryPressure=True on the first crossing.
func (bn *baselineNode) run(ctx context.Context, s *pollingSampler) {
	t := time.NewTicker(kubeletPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.crossed() {
			continue
		}
		bn.mu.Lock()
		if !bn.posted && bn.post(corev1.ConditionTrue) == nil {
			bn.posted = true
		}
		bn.mu.Unlock()
	}
}

// BenchmarkEvictionBeforeOOM is the standard hog scenario: a hog allocating 200 MiB/s
// without end in a pods cgroup limited to the threshold plus 2 GiB. Per run it
// records when plinthd's eviction interface is first called (the in-process manager
// over the real adapters, with a recording Evictor and one pod to choose), and when
// the kernel OOM-kills the hog (seen by the BPF OOM watcher). The eviction must come
// first in every run. A baseline sampling every 10 s (random phase) is scored in the
// same runs: whether one of its samples saw the crossing before the kill.
func BenchmarkEvictionBeforeOOM(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.PSI, kerneltest.BTF, cgrouptest.Cgroups)
	const (
		threshold = 100 << 20
		headroom  = 2 << 30
		rate      = 200 // MiB/s
	)
	oom, err := oomwatch.Load(oomwatch.Options{Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer oom.Close()
	// A reclaim tracker of its own and the kernel's run statistics give the cost of
	// each OOM and reclaim program run in this scenario.
	rec, err := reclaim.Load(reclaim.Options{Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	stats, err := attach.EnableStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kills := oom.OOMEvents(ctx)

	var detect, evict, margin, toOOM, evictAfter []time.Duration
	baselineInTime := 0
	for b.Loop() {
		cg := cgrouptest.New(b, cgrouptest.Options{MemoryLimit: threshold + headroom})
		ev := newRecordingEvictor()
		p := startInProcess(b, pressuresignals.Options{NodefsDir: b.TempDir(), ImagefsDir: b.TempDir(), PodsCgroup: cg.Path()},
			map[string]string{"allocatableMemory.available": strconv.Itoa(threshold)}, onePod{}, ev)
		p.waitEvaluated(b)
		sampler := newPollingSampler(b, cg.Path(), threshold)
		phase := rand.N(kubeletPeriod)

		hog := hogCommand(b, rate, 0)
		bctx, bcancel := context.WithCancel(ctx)
		crossing := watchCrossing(bctx, b, cg, threshold)
		if err := cg.Start(hog); err != nil {
			b.Fatal(err)
		}
		hogStart := time.Now()
		baselineSaw := make(chan time.Time, 1)
		go func() {
			next := hogStart.Add(phase)
			for {
				select {
				case <-bctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				if sampler.crossed() {
					baselineSaw <- time.Now()
					return
				}
				next = next.Add(kubeletPeriod)
			}
		}()
		pressureAt, _ := p.waitCondition(b, corev1.NodeMemoryPressure, corev1.ConditionTrue, 30*time.Second)
		crossed := crossedAt(b, crossing)
		var killedAt time.Time
		for killedAt.IsZero() {
			select {
			case k := <-kills:
				// The victim may be any thread of the hog; tp_btf mode gives its process.
				if k.PID == hog.Process.Pid || (k.Details != nil && k.Details.TGID == hog.Process.Pid) {
					killedAt = k.Seen
				}
			case <-time.After(30 * time.Second):
				b.Fatal("the hog was not OOM-killed within 30s")
			}
		}
		bcancel()
		_ = hog.Wait()
		evictedAt, _ := ev.firstCall()
		if evictedAt.IsZero() || !evictedAt.Before(killedAt) {
			b.Errorf("run %d: eviction at %v, OOM kill at %s after the hog started: eviction did not come first",
				len(evict)+1, sinceOrNever(evictedAt, hogStart), killedAt.Sub(hogStart).Round(time.Millisecond))
		}
		select {
		case at := <-baselineSaw:
			if at.Before(killedAt) {
				baselineInTime++
			}
		default:
		}
		detect = append(detect, pressureAt.Sub(hogStart))
		evict = append(evict, evictedAt.Sub(hogStart))
		evictAfter = append(evictAfter, evictedAt.Sub(crossed))
		margin = append(margin, killedAt.Sub(evictedAt))
		toOOM = append(toOOM, killedAt.Sub(hogStart))
		p.stop()
	}
	reportDurations(b, "detect", detect)
	reportDurations(b, "evict", evict)
	reportDurations(b, "evict-after-crossing", evictAfter)
	reportDurations(b, "oom", toOOM)
	reportDurations(b, "evict-before-oom-margin", margin)
	slices.Sort(margin)
	b.ReportMetric(margin[0].Seconds(), "min-margin-s")
	for name, src := range map[string]interface {
		Stats() (map[string]attach.RunStats, error)
	}{"oom": oom, "reclaim": rec} {
		st, err := src.Stats()
		if err != nil {
			b.Fatal(err)
		}
		var total attach.RunStats
		for _, s := range st {
			total.Runs += s.Runs
			total.Runtime += s.Runtime
		}
		if total.Runs > 0 {
			b.ReportMetric(float64(total.PerRun().Nanoseconds()), name+"-bpf-ns/event")
			b.ReportMetric(float64(total.Runs)/float64(len(evict)), name+"-events/run")
		}
	}
	b.ReportMetric(float64(baselineInTime)/float64(len(evict)), "baseline-in-time-fraction")
}

func sinceOrNever(t, start time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(start).Round(time.Millisecond).String()
}

// BenchmarkIdle runs plinthd (every feed active, a pods cgroup configured) against a
// control service for a minute with nothing happening and reports its CPU use (share
// of one core) and resident memory.
func BenchmarkIdle(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, cgrouptest.Cgroups)
	cg := cgrouptest.New(b, cgrouptest.Options{MemoryLimit: podsLimit}) // every feed on, as on a node with pods
	c := startControl(b)
	d := startPlinthd(b, c, "idle-node", fmt.Sprintf("podsCgroup: %s\n", cg.Path()))
	pid := d.proc.cmd.Process.Pid
	const warmup, window = 10 * time.Second, 60 * time.Second
	for b.Loop() {
		time.Sleep(warmup)
		cpu0, t0 := cpuTime(b, pid), time.Now()
		time.Sleep(window)
		cpu1, t1 := cpuTime(b, pid), time.Now()
		share := (cpu1 - cpu0).Seconds() / t1.Sub(t0).Seconds()
		rss := statusField(b, pid, "VmRSS")
		b.ReportMetric(share*100, "cpu-%-of-core")
		b.ReportMetric(float64(rss)/1024, "rss-MiB")
		b.ReportMetric(float64(statusField(b, pid, "VmHWM"))/1024, "peak-rss-MiB")
		anon, file := statusField(b, pid, "RssAnon"), statusField(b, pid, "RssFile")
		b.ReportMetric(float64(anon)/1024, "rss-anon-MiB")
		b.Logf("plinthd idle over %s: %.3f%% of one core, RSS %.1f MiB (anonymous %.1f MiB, file-backed %.1f MiB: pages of the binary)",
			t1.Sub(t0).Round(time.Second), share*100, float64(rss)/1024, float64(anon)/1024, float64(file)/1024)
		m := residentByMapping(b, pid)
		b.Logf("resident by mapping (MiB): binary code %.1f, binary read-only data (types, strings, pclntab) %.1f, binary writable data %.1f, "+
			"anonymous (Go heap, stacks, runtime) %.1f, shared libraries %.1f, other (BPF maps...) %.1f",
			mib(m.code), mib(m.rodata), mib(m.data), mib(m.anon), mib(m.libs), mib(m.other))
	}
}

// residentMemory is a process's resident memory in kB by kind of mapping.
type residentMemory struct {
	code, rodata, data uint64 // the executable's text, read-only and writable mappings
	anon, libs, other  uint64
}

func mib(kb uint64) float64 { return float64(kb) / 1024 }

// residentByMapping sums the Rss of each mapping in /proc/<pid>/smaps by what it maps.
// The anonymous pages of a file's private writable
// mapping (its written .data) count as anonymous, as RssAnon counts them.
func residentByMapping(tb testing.TB, pid int) residentMemory {
	tb.Helper()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		tb.Fatal(err)
	}
	var r residentMemory
	var kind *uint64
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			path := ""
			if len(fields) >= 6 {
				path = fields[5]
			}
			perms := fields[1]
			switch {
			case path == exe && perms[2] == 'x':
				kind = &r.code
			case path == exe && perms[1] == 'w':
				kind = &r.data
			case path == exe:
				kind = &r.rodata
			case path == "" || strings.HasPrefix(path, "[stack") || path == "[heap]":
				kind = &r.anon
			case strings.Contains(path, ".so"):
				kind = &r.libs
			default:
				kind = &r.other
			}
		case len(fields) >= 2 && fields[0] == "Rss:" && kind != nil:
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			*kind += kb
		case len(fields) >= 2 && fields[0] == "Anonymous:" && kind != nil && kind != &r.anon:
			// Copy-on-write pages of a file mapping are anonymous memory.
			a, _ := strconv.ParseUint(fields[1], 10, 64)
			*kind -= a
			r.anon += a
		}
	}
	return r
}

// cpuTime is utime+stime of pid from /proc/<pid>/stat.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	utime, _ := strconv.ParseUint(fields[11], 10, 64)
	stime, _ := strconv.ParseUint(fields[12], 10, 64)
	hz := clockTicks(tb)
	return time.Duration(float64(utime+stime) / hz * float64(time.Second))
}

func clockTicks(tb testing.TB) float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || v <= 0 {
		return 100
	}
	return v
}

// statusField is a kB field of /proc/<pid>/status.
func statusField(tb testing.TB, pid int, name string) uint64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
