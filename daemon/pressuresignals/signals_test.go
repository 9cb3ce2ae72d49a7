package pressuresignals

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/bpf/oomwatch"
	"github.com/plinth/plinth/bpf/reclaim"
	"github.com/plinth/plinth/bpf/tasks"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/psi"
)

// guard bounds real-time waits, so a broken goroutine fails a test instead of hanging it.
const guard = 5 * time.Second

func nextWakeup(t *testing.T, s *Signals) pressure.Trigger {
	t.Helper()
	select {
	case tr := <-s.Wakeups():
		return tr
	case <-time.After(guard):
		t.Fatal("no wakeup")
		return ""
	}
}

func noWakeup(t *testing.T, s *Signals, within time.Duration) {
	t.Helper()
	select {
	case tr := <-s.Wakeups():
		t.Fatalf("unexpected wakeup %q", tr)
	case <-time.After(within):
	}
}

// gather returns every sample of reg as "name{k=v,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			}
		}
	}
	return out
}

// recordingSink is an EventSink that keeps what it is given.
type recordingSink struct {
	mu     sync.Mutex
	events []*corev1.Event
	err    error
	posted chan struct{}
}

func newRecordingSink() *recordingSink { return &recordingSink{posted: make(chan struct{}, 16)} }

func (r *recordingSink) Create(_ context.Context, ev *corev1.Event) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	err := r.err
	r.mu.Unlock()
	r.posted <- struct{}{}
	return err
}

func (r *recordingSink) wait(t *testing.T) *corev1.Event {
	t.Helper()
	select {
	case <-r.posted:
	case <-time.After(guard):
		t.Fatal("no event posted")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

type closeCounter struct{ n *int }

func (c closeCounter) Close() error { *c.n++; return nil }

func TestEventSourcesWakeTheManager(t *testing.T) {
	f := newFixture(t)
	clk := testingclock.NewFakeClock(t0)
	node, pods := psi.NewFakeTrigger(clk), psi.NewFakeTrigger(clk)
	oom, rec, tc := oomwatch.NewFake(), reclaim.NewFake(), tasks.NewFake()
	closed := 0
	s := newTestSignals(t, Options{Clock: clk, PodsCgroup: "/plinth-pods"}, Deps{
		Host:     f.host(),
		Triggers: []Trigger{{Feed: FeedPSI, Path: "/proc/pressure/memory", Events: node}, {Feed: FeedPSIPods, Path: "/pods/memory.pressure", Events: pods}},
		OOM:      oom, Reclaim: rec, Tasks: tc,
		Closers: []io.Closer{closeCounter{&closed}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)

	node.Fire()
	if got := nextWakeup(t, s); got != pressure.TriggerPSI {
		t.Errorf("node PSI trigger woke with %q", got)
	}
	pods.Fire()
	if got := nextWakeup(t, s); got != pressure.TriggerPSI {
		t.Errorf("pods PSI trigger woke with %q", got)
	}
	rec.Burst(reclaim.StallBurst{Kind: reclaim.Memcg, Duration: 150 * time.Millisecond})
	if got := nextWakeup(t, s); got != pressure.TriggerReclaimStall {
		t.Errorf("reclaim burst woke with %q", got)
	}
	oom.Kill(oomwatch.OOMKill{PID: 4242, Comm: "hog"})
	if got := nextWakeup(t, s); got != pressure.TriggerOOMKill {
		t.Errorf("OOM kill woke with %q", got)
	}

	// Forks: 150 within one poll interval is a burst, 10 is not. The poller reads its
	// baseline before it starts ticking; wait until its ticker exists.
	waitForWaiters(t, clk)
	tc.Set(7, tasks.TaskCount{Forks: 150})
	clk.Step(DefaultForkPollInterval)
	if got := nextWakeup(t, s); got != pressure.TriggerForkBurst {
		t.Errorf("fork burst woke with %q", got)
	}
	tc.Set(7, tasks.TaskCount{Forks: 160})
	clk.Step(DefaultForkPollInterval)
	noWakeup(t, s, 100*time.Millisecond)

	for _, fd := range s.Feeds() {
		if !fd.Active {
			t.Errorf("feed %+v inactive while its source works", fd)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if closed != 1 {
		t.Errorf("Close closed %d closers, want 1", closed)
	}
}

// waitForWaiters waits until some goroutine waits on the fake clock.
func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing started waiting on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFailedAndMissingFeedsAreReported(t *testing.T) {
	f := newFixture(t)
	clk := testingclock.NewFakeClock(t0)
	node := psi.NewFakeTrigger(clk)
	s := newTestSignals(t, Options{Clock: clk}, Deps{
		Host:     f.host(),
		Triggers: []Trigger{{Feed: FeedPSI, Path: "/proc/pressure/memory", Events: node}},
		Unavailable: map[string]error{
			FeedOOM:     errors.New("oomwatch: no BTF"),
			FeedReclaim: errors.New("reclaim: tracefs not mounted"),
			FeedTasks:   nil,
		},
	})
	s.Start(context.Background())
	node.Fail(errors.New("poll returned POLLERR: psi trigger gone"))
	deadline := time.Now().Add(guard)
	for feedByName(t, s.Feeds(), FeedPSI).Active {
		if time.Now().After(deadline) {
			t.Fatal("a failed PSI trigger still counts as active")
		}
		time.Sleep(time.Millisecond)
	}
	obs, err := s.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		FeedPSI:     "psi trigger gone",
		FeedOOM:     "no BTF",
		FeedReclaim: "tracefs not mounted",
		FeedTasks:   "unavailable",
	} {
		fd := feedByName(t, obs.Feeds, name)
		if fd.Active || !strings.Contains(fd.Detail, want) {
			t.Errorf("feed %s = %+v, want inactive saying %q", name, fd, want)
		}
	}
	var names []string
	for _, fd := range obs.Feeds {
		names = append(names, fd.Name)
	}
	if got, want := strings.Join(names, ","), "meminfo,cgroup,statfs,pids,psi,ebpf-oom,ebpf-reclaim,ebpf-tasks"; got != want {
		t.Errorf("feeds %s, want %s (no psi-pods without a pods cgroup)", got, want)
	}

	// The manager turns them into condition messages and plinth_eviction_feed_active.
	reg := prometheus.NewRegistry()
	m, err := pressure.NewManager(pressure.DefaultConfig(), pressure.Deps{Source: s, Registerer: reg, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline = time.Now().Add(guard)
	for !m.Snapshot().Evaluated {
		if time.Now().After(deadline) {
			t.Fatal("manager did not evaluate")
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range m.Conditions() {
		if c.Type == corev1.NodeMemoryPressure && !strings.Contains(c.Message, "unavailable: psi, ebpf-oom, ebpf-reclaim") {
			t.Errorf("MemoryPressure message %q does not name the unavailable feeds", c.Message)
		}
	}
	got := gather(t, reg)
	if got[`plinth_eviction_feed_active{feed=ebpf-oom}`] != 0 || got[`plinth_eviction_feed_active{feed=meminfo}`] != 1 {
		t.Errorf("feed metrics: ebpf-oom %v, meminfo %v; want 0 and 1", got[`plinth_eviction_feed_active{feed=ebpf-oom}`], got[`plinth_eviction_feed_active{feed=meminfo}`])
	}
}

func TestOOMKillIsCountedAndPostedOnTheNode(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.cgroups, "unified", "plinth-pods", "pod-a")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(victim, &st); err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(t0)
	oom := oomwatch.NewFake()
	sink := newRecordingSink()
	reg := prometheus.NewRegistry()
	s := newTestSignals(t, Options{Clock: clk, NodeName: "node-a", Events: sink, Registerer: reg}, Deps{Host: f.host(), OOM: oom})
	s.Start(context.Background())

	oom.Kill(oomwatch.OOMKill{PID: 4242, Comm: "hog", CgroupID: st.Ino})
	ev := sink.wait(t)
	if ev.Reason != ReasonSystemOOM || ev.Type != corev1.EventTypeWarning || ev.Namespace != "default" {
		t.Errorf("event reason %q type %q namespace %q, want SystemOOM, Warning, default", ev.Reason, ev.Type, ev.Namespace)
	}
	if want := "System OOM encountered, victim process: hog, pid: 4242, cgroup: /plinth-pods/pod-a"; ev.Message != want {
		t.Errorf("message %q, want %q", ev.Message, want)
	}
	if o := ev.InvolvedObject; o.Kind != "Node" || o.Name != "node-a" || o.UID != "node-a" {
		t.Errorf("involvedObject %+v, want the Node node-a (UID = name, as kubelet)", o)
	}
	if ev.Source.Component != "plinthd" || ev.Source.Host != "node-a" || !ev.FirstTimestamp.Time.Equal(t0) || ev.Count != 1 {
		t.Errorf("event source %+v first %s count %d", ev.Source, ev.FirstTimestamp, ev.Count)
	}

	// The control service may not serve events: the next kill is still counted.
	sink.mu.Lock()
	sink.err = errors.New("the server could not find the requested resource")
	sink.mu.Unlock()
	oom.Kill(oomwatch.OOMKill{PID: 4243})
	if ev := sink.wait(t); ev.Message != "System OOM encountered, victim process: unknown, pid: 4243" {
		t.Errorf("message without comm or cgroup = %q", ev.Message)
	}
	if got := gather(t, reg)["plinth_oom_kills_total"]; got != 2 {
		t.Errorf("plinth_oom_kills_total = %v, want 2", got)
	}
}

func TestReclaimAndPSIMetricsAreReadAtScrape(t *testing.T) {
	f := newFixture(t)
	f.write("proc/pressure/memory", "some avg10=1.50 avg60=0.20 avg300=0.05 total=2500000\nfull avg10=0.50 avg60=0.10 avg300=0.01 total=1000000\n")
	f.write("proc/pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=4000000\n") // a kernel without the full line
	rec := reclaim.NewFake()
	rec.SetTotals(1, reclaim.ReclaimStat{DirectStall: 1500 * time.Millisecond, MemcgStall: 250 * time.Millisecond})
	rec.SetTotals(2, reclaim.ReclaimStat{MemcgStall: 750 * time.Millisecond})
	reg := prometheus.NewRegistry()
	newTestSignals(t, Options{Registerer: reg}, Deps{Host: f.host(), Reclaim: rec})
	got := gather(t, reg)
	for name, want := range map[string]float64{
		"plinth_direct_reclaim_seconds_total{kind=direct}": 1.5,
		"plinth_direct_reclaim_seconds_total{kind=memcg}":  1,
		"plinth_node_psi_memory_some_seconds_total":        2.5,
		"plinth_node_psi_memory_full_seconds_total":        1,
		"plinth_node_psi_cpu_some_seconds_total":           4,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t), want %v", name, v, ok, want)
		}
	}
	for _, absent := range []string{"plinth_node_psi_cpu_full_seconds_total", "plinth_node_psi_io_some_seconds_total"} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s reported without its line or file", absent)
		}
	}
}

// Signals is the manager's source: a crossing seen on the pods cgroup makes
// MemoryPressure True, naming the signal and the feeds.
func TestManagerOverFixture(t *testing.T) {
	f := newFixture(t)
	f.podsCgroup("/plinth-pods", 450*mib, 0, itoa(512*mib))
	cfg := pressure.DefaultConfig()
	cfg.Thresholds = thresholds(t, map[string]string{"allocatableMemory.available": "100Mi"})
	s := newTestSignals(t, Options{PodsCgroup: "/plinth-pods", Thresholds: cfg.Thresholds}, Deps{Host: f.host()})
	m, err := pressure.NewManager(cfg, pressure.Deps{Source: s, Wakeups: s.Wakeups(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-m.Changed():
	case <-time.After(guard):
		t.Fatal("no condition change")
	}
	for _, c := range m.Conditions() {
		if c.Type != corev1.NodeMemoryPressure {
			continue
		}
		if c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "allocatableMemory.available 62Mi < 100Mi") ||
			!strings.Contains(c.Message, "signals: meminfo, cgroup") {
			t.Errorf("MemoryPressure = %s %q", c.Status, c.Message)
		}
	}
}
