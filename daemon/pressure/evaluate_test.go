package pressure

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memoryObs is an observation with memory.available = avail of an 8Gi node.
func memoryObs(avail int64) Observations {
	return Observations{
		Memory: &MemoryStats{CapacityBytes: uint64(8 * gi), MemAvailableBytes: uint64(avail), HasMemAvailable: true},
		Feeds: []Feed{
			{Name: "psi", Conditions: []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure}, Active: true},
			{Name: "meminfo", Conditions: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, Active: true},
			{Name: "ebpf-oom", Conditions: []corev1.NodeConditionType{corev1.NodeMemoryPressure}, Active: false, Detail: "no BTF"},
			{Name: "statfs", Conditions: []corev1.NodeConditionType{corev1.NodeDiskPressure}, Active: true},
		},
	}
}

func mustThresholds(t *testing.T, spec ThresholdSpec) []Threshold {
	t.Helper()
	th, err := ParseThresholds(spec)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func condition(t *testing.T, ev evaluation, typ corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	for _, c := range ev.conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %v", typ, ev.conditions)
	return corev1.NodeCondition{}
}

func TestConditionMessagesAndReasons(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{Hard: DefaultEvictionHard()}), 5*time.Minute)
	ev := e.evaluate(t0, memoryObs(80*mi))
	mem := condition(t, ev, corev1.NodeMemoryPressure)
	if mem.Status != corev1.ConditionTrue || mem.Reason != ReasonInsufficientMemory {
		t.Errorf("MemoryPressure = %s/%s, want True/%s", mem.Status, mem.Reason, ReasonInsufficientMemory)
	}
	if want := "memory.available 80Mi < 100Mi (signals: psi, meminfo; unavailable: ebpf-oom)"; mem.Message != want {
		t.Errorf("MemoryPressure message = %q, want %q", mem.Message, want)
	}
	disk := condition(t, ev, corev1.NodeDiskPressure)
	if disk.Status != corev1.ConditionFalse || disk.Reason != ReasonNoDiskPressure ||
		disk.Message != MessageNoDiskPressure+" (signals: psi, statfs)" {
		t.Errorf("DiskPressure = %+v, want False/%s with the disk feeds", disk, ReasonNoDiskPressure)
	}
	pid := condition(t, ev, corev1.NodePIDPressure)
	if pid.Status != corev1.ConditionFalse || pid.Reason != ReasonSufficientPID || pid.Message != MessageSufficientPID+" (signals: none)" {
		t.Errorf("PIDPressure = %+v, want False/%s, no feeds", pid, ReasonSufficientPID)
	}
	if got := []corev1.NodeConditionType{ev.conditions[0].Type, ev.conditions[1].Type, ev.conditions[2].Type}; got[0] != corev1.NodeMemoryPressure ||
		got[1] != corev1.NodeDiskPressure || got[2] != corev1.NodePIDPressure {
		t.Errorf("condition order %v, want kubelet's", got)
	}
}

func TestPercentageThresholdsAgainstCapacity(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{Hard: DefaultEvictionHard()}), 0)
	fs := &FilesystemStats{CapacityBytes: uint64(100 * gi), AvailableBytes: uint64(12 * gi), Inodes: 1_000_000, InodesFree: 40_000}
	ev := e.evaluate(t0, Observations{Nodefs: fs, Imagefs: fs, PIDs: &PIDStats{PIDMax: 32768, ThreadsMax: 1 << 20, Tasks: 31200}})
	crossed := map[string]bool{}
	for _, r := range ev.results {
		if r.Crossed {
			crossed[r.String()] = true
		}
	}
	// 12Gi of 100Gi: above nodefs' 10% (10Gi), below imagefs' 15% (15Gi); 40000 of 1e6
	// inodes is below 5% (50000); 32768-31200 = 1568 PIDs is below 5% of 32768 (1638).
	for th, want := range map[string]bool{
		"nodefs.available<10%": false, "imagefs.available<15%": true,
		"nodefs.inodesFree<5%": true, "imagefs.inodesFree<5%": true, "pid.available<5%": true,
	} {
		if crossed[th] != want {
			t.Errorf("%s crossed = %t, want %t", th, crossed[th], want)
		}
	}
	disk := condition(t, ev, corev1.NodeDiskPressure)
	for _, part := range []string{"imagefs.available 12Gi < 15Gi (15% of 100Gi)", "nodefs.inodesFree 40000 < 50000 (5% of 1000000)"} {
		if !strings.Contains(disk.Message, part) {
			t.Errorf("DiskPressure message %q lacks %q", disk.Message, part)
		}
	}
	pid := condition(t, ev, corev1.NodePIDPressure)
	if pid.Status != corev1.ConditionTrue || pid.Reason != ReasonInsufficientPID || !strings.HasPrefix(pid.Message, "pid.available 1568 < 1638 (5% of 32768)") {
		t.Errorf("PIDPressure = %+v", pid)
	}
}

// TestTransitionPeriod: True at once on crossing, True while crossings recur, False
// only after a full transition period without one.
func TestTransitionPeriod(t *testing.T) {
	const period = 5 * time.Minute
	e := newEvaluator(mustThresholds(t, ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}}), period)
	steps := []struct {
		at    time.Duration
		avail int64
		want  corev1.ConditionStatus
	}{
		{0, 1 * gi, corev1.ConditionFalse},
		{1 * time.Second, 80 * mi, corev1.ConditionTrue}, // crossing: True at once
		{2 * time.Second, 1 * gi, corev1.ConditionTrue},  // held
		{3 * time.Minute, 90 * mi, corev1.ConditionTrue}, // crossed again: the period restarts
		{3*time.Minute + time.Second, 1 * gi, corev1.ConditionTrue},
		{8*time.Minute - time.Second, 1 * gi, corev1.ConditionTrue},       // 4m59s after the last crossing
		{8 * time.Minute, 1 * gi, corev1.ConditionFalse},                  // a full period without one
		{8*time.Minute + time.Second, 1 * gi, corev1.ConditionFalse},      // stays False
		{9 * time.Minute, 99 * mi, corev1.ConditionTrue},                  // and True again at once
		{14*time.Minute - time.Millisecond, 1 * gi, corev1.ConditionTrue}, // just short of the period
		{14 * time.Minute, 1 * gi, corev1.ConditionFalse},
	}
	for _, s := range steps {
		ev := e.evaluate(t0.Add(s.at), memoryObs(s.avail))
		c := condition(t, ev, corev1.NodeMemoryPressure)
		if c.Status != s.want {
			t.Fatalf("at +%s with %s available: MemoryPressure %s, want %s (%s)", s.at, formatBytes(s.avail), c.Status, s.want, c.Message)
		}
		held := c.Status == corev1.ConditionTrue && s.avail >= 100*mi
		if held && !strings.Contains(c.Message, "no threshold crossed since") {
			t.Errorf("at +%s: held condition's message %q does not say so", s.at, c.Message)
		}
		if c.Status == corev1.ConditionFalse && c.Reason != ReasonSufficientMemory {
			t.Errorf("at +%s: reason %s", s.at, c.Reason)
		}
	}
}

func TestTransitionPeriodZero(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}}), 0)
	if c := condition(t, e.evaluate(t0, memoryObs(50*mi)), corev1.NodeMemoryPressure); c.Status != corev1.ConditionTrue {
		t.Fatalf("crossing: %s", c.Status)
	}
	if c := condition(t, e.evaluate(t0.Add(time.Second), memoryObs(200*mi)), corev1.NodeMemoryPressure); c.Status != corev1.ConditionFalse {
		t.Errorf("without a transition period the condition is %s after the crossing ended", c.Status)
	}
}

// TestSoftThresholdGrace: the condition turns True on the first crossing, eviction
// only after the grace period of continuous crossing, and an interruption restarts it.
func TestSoftThresholdGrace(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{
		Hard:            map[string]string{"memory.available": "100Mi"},
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]time.Duration{"memory.available": 90 * time.Second},
	}), 5*time.Minute)
	soft := func(ev evaluation) ThresholdState {
		for _, r := range ev.results {
			if r.Soft() {
				return r
			}
		}
		t.Fatal("no soft threshold")
		return ThresholdState{}
	}
	steps := []struct {
		at                  time.Duration
		avail               int64
		crossed, actionable bool
	}{
		{0, 2 * gi, false, false},
		{10 * time.Second, 500 * mi, true, false},
		{99 * time.Second, 500 * mi, true, false}, // 89s into the grace period
		{100 * time.Second, 500 * mi, true, true}, // 90s
		{101 * time.Second, 2 * gi, false, false}, // interrupted
		{110 * time.Second, 500 * mi, true, false},
		{199 * time.Second, 500 * mi, true, false},
		{200 * time.Second, 500 * mi, true, true},
	}
	for _, s := range steps {
		ev := e.evaluate(t0.Add(s.at), memoryObs(s.avail))
		r := soft(ev)
		if r.Crossed != s.crossed || r.Actionable != s.actionable {
			t.Fatalf("at +%s: soft crossed=%t actionable=%t, want %t/%t", s.at, r.Crossed, r.Actionable, s.crossed, s.actionable)
		}
		c := condition(t, ev, corev1.NodeMemoryPressure)
		if s.crossed && (c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "memory.available 500Mi < 1Gi (soft, grace period 1m30s)")) {
			t.Errorf("at +%s: MemoryPressure %s %q, want True naming the soft threshold", s.at, c.Status, c.Message)
		}
		if _, ok := mostUrgent(ev.results); ok != s.actionable {
			t.Errorf("at +%s: eviction would act = %t, want %t", s.at, ok, s.actionable)
		}
	}
}

// TestMinimumReclaim: once crossed, a threshold stays crossed until the available
// amount reaches threshold + minimum reclaim; an uncrossed one is not held.
func TestMinimumReclaim(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{
		Hard:           map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
		MinimumReclaim: map[string]string{"memory.available": "50Mi", "nodefs.available": "5%"},
	}), 0)
	steps := []struct {
		avail            int64
		crossed, holding bool
	}{
		{120 * mi, false, false}, // between threshold and threshold+reclaim, never crossed: not held
		{80 * mi, true, false},
		{120 * mi, true, true},
		{149 * mi, true, true},
		{150 * mi, false, false},
		{120 * mi, false, false},
	}
	for i, s := range steps {
		ev := e.evaluate(t0.Add(time.Duration(i)*time.Second), memoryObs(s.avail))
		r := ev.results[0]
		if r.Signal != SignalMemoryAvailable || r.Crossed != s.crossed || r.Holding != s.holding || r.Actionable != s.crossed {
			t.Fatalf("step %d (%s): %s crossed=%t holding=%t actionable=%t, want %t/%t", i, formatBytes(s.avail), r.Signal, r.Crossed, r.Holding, r.Actionable, s.crossed, s.holding)
		}
		if s.holding {
			c := condition(t, ev, corev1.NodeMemoryPressure)
			if want := "memory.available 120Mi < 150Mi (threshold 100Mi + minimum reclaim 50Mi)"; s.avail == 120*mi && !strings.HasPrefix(c.Message, want) {
				t.Errorf("message %q, want it to start %q", c.Message, want)
			}
		}
	}
	// A percentage minimum reclaim is taken of capacity: 10% + 5% of 100Gi = 15Gi.
	fs := func(avail int64) Observations {
		return Observations{Nodefs: &FilesystemStats{CapacityBytes: uint64(100 * gi), AvailableBytes: uint64(avail)}}
	}
	e.evaluate(t0.Add(time.Minute), fs(9*gi))
	if r := e.evaluate(t0.Add(time.Minute+time.Second), fs(15*gi-1)).results[1]; !r.Holding {
		t.Errorf("nodefs at 15Gi-1 after crossing: %+v, want held", r)
	}
	if r := e.evaluate(t0.Add(time.Minute+2*time.Second), fs(15*gi)).results[1]; r.Crossed {
		t.Errorf("nodefs at 15Gi: still crossed")
	}
}

// TestUnobservedSignal: a signal that cannot be read crosses nothing, and its
// threshold's state starts afresh when it comes back.
func TestUnobservedSignal(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]time.Duration{"memory.available": time.Minute},
	}), 0)
	e.evaluate(t0, memoryObs(100*mi))
	ev := e.evaluate(t0.Add(30*time.Second), Observations{})
	if r := ev.results[0]; r.Observed || r.Crossed {
		t.Fatalf("unobserved signal: %+v", r)
	}
	if c := condition(t, ev, corev1.NodeMemoryPressure); c.Status != corev1.ConditionFalse {
		t.Errorf("MemoryPressure %s with no memory observation and no transition period", c.Status)
	}
	r := e.evaluate(t0.Add(70*time.Second), memoryObs(100*mi)).results[0]
	if !r.Crossed || r.Actionable || !r.Since.Equal(t0.Add(70*time.Second)) {
		t.Errorf("after the gap: %+v, want crossed since the return, grace period restarted", r)
	}
}

func TestShapeIgnoresValues(t *testing.T) {
	e := newEvaluator(mustThresholds(t, ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}}), time.Minute)
	a := e.evaluate(t0, memoryObs(80*mi))
	b := e.evaluate(t0.Add(time.Second), memoryObs(70*mi))
	if a.shape != b.shape {
		t.Errorf("shape changed with only the value: %q -> %q", a.shape, b.shape)
	}
	if a.conditions[0].Message == b.conditions[0].Message {
		t.Errorf("message did not follow the value: %q", a.conditions[0].Message)
	}
	c := e.evaluate(t0.Add(2*time.Second), memoryObs(1*gi)) // held, no longer crossed
	if c.shape == b.shape {
		t.Errorf("shape unchanged when the crossing ended: %q", c.shape)
	}
	obs := memoryObs(1 * gi)
	obs.Feeds[2].Active = true
	if d := e.evaluate(t0.Add(3*time.Second), obs); d.shape == c.shape {
		t.Errorf("shape unchanged when a feed came back: %q", d.shape)
	}
}

func TestFormatBytes(t *testing.T) {
	for v, want := range map[int64]string{
		0: "0", 1023: "1023", 1024: "1Ki", 80 * mi: "80Mi", 3*gi + 200*mi: "3.2Gi",
		-5 * mi: "-5Mi", 1<<63 - 1: "8Ei", -1 << 63: "-8Ei", 1024*1024 - 1: "1Mi", 1023*1024 + 1000: "1Mi", 1023*1024 + 900: "1023.9Ki",
	} {
		if got := formatBytes(v); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", v, got, want)
		}
	}
}
