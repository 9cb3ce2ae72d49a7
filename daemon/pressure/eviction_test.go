package pressure

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// workerHarness drives an evictionWorker step by step with evaluations from a real
// evaluator, numbering them as the manager does.
type workerHarness struct {
	t         *testing.T
	w         *evictionWorker
	e         *evaluator
	pods      *fakePods
	reclaimer *fakeReclaimer
	clk       *clocktesting.FakeClock
	seq       uint64
	pokes     int
}

func newWorkerHarness(t *testing.T, spec ThresholdSpec, pods *fakePods, reclaimer *fakeReclaimer) *workerHarness {
	t.Helper()
	h := &workerHarness{t: t, e: newEvaluator(mustThresholds(t, spec), time.Minute), pods: pods, reclaimer: reclaimer,
		clk: clocktesting.NewFakeClock(t0)}
	met, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.w = &evictionWorker{
		pods: pods, evictor: pods, clock: h.clk, logger: discardLogger(), metrics: met,
		goneTimeout: DefaultPodGoneTimeout,
		startedSeq:  func() uint64 { return h.seq },
		poke:        func() { h.pokes++ },
	}
	if reclaimer != nil {
		h.w.reclaimer = reclaimer
	}
	return h
}

// evaluate numbers and returns an evaluation of obs at the fake clock's time.
func (h *workerHarness) evaluate(obs Observations) evaluation {
	h.seq++
	ev := h.e.evaluate(h.clk.Now(), obs)
	ev.seq = h.seq
	return ev
}

func (h *workerHarness) step(obs Observations) { h.w.step(context.Background(), h.evaluate(obs)) }

func (h *workerHarness) wantEvicted(when string, want ...string) {
	h.t.Helper()
	if got := h.pods.evictions(); !slices.Equal(got, want) {
		h.t.Fatalf("%s: evicted %v, want %v", when, got, want)
	}
}

var memorySpec = ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}}

// TestEvictionOneAtATime: one pod is evicted, the next only after the first has gone
// and a fresh evaluation still shows the threshold crossed; critical pods never.
func TestEvictionOneAtATime(t *testing.T) {
	pods := newFakePods(
		memPod("b-small", 0, 300*mi, 100*mi),
		memPod("a-big", 0, 500*mi, 100*mi),
		Pod{Namespace: "kube-system", Name: "critical", Critical: true, Usage: Usage{MemoryBytes: 4 * gi}},
	)
	h := newWorkerHarness(t, memorySpec, pods, nil)
	crossed := memoryObs(50 * mi)

	h.step(crossed)
	h.wantEvicted("first crossing", "a-big")
	if msg := pods.messages[0]; msg != "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Pod was using 500Mi, request is 100Mi." {
		t.Errorf("eviction message %q", msg)
	}
	if pods.graces[0] != HardEvictionGracePeriod {
		t.Errorf("a pod evicted for a hard threshold gets %s to stop, want %s", pods.graces[0], HardEvictionGracePeriod)
	}
	h.step(crossed)
	h.clk.Step(20 * time.Second)
	h.step(crossed)
	h.wantEvicted("while the first pod is still there", "a-big")

	pods.markGone("a-big")
	h.step(crossed) // notices the pod went; figures from before that do not count
	h.wantEvicted("the evaluation that saw the pod go", "a-big")
	if h.pokes != 1 {
		t.Errorf("%d requests for a fresh evaluation after the pod went, want 1", h.pokes)
	}
	h.step(crossed)
	h.wantEvicted("a fresh evaluation still crossed", "a-big", "b-small")

	pods.markGone("b-small")
	h.step(crossed)
	h.step(crossed)
	h.step(crossed)
	h.wantEvicted("only a critical pod left", "a-big", "b-small")
}

func TestEvictionStopsWhenResolved(t *testing.T) {
	pods := newFakePods(memPod("a", 0, 500*mi, 0), memPod("b", 0, 400*mi, 0))
	h := newWorkerHarness(t, memorySpec, pods, nil)
	h.step(memoryObs(50 * mi))
	pods.markGone("a")
	h.step(memoryObs(50 * mi))
	h.step(memoryObs(1 * gi))
	h.step(memoryObs(1 * gi))
	h.wantEvicted("after memory came back", "a")
}

func TestEvictionGoneTimeout(t *testing.T) {
	pods := newFakePods(memPod("stuck", 0, 500*mi, 0), memPod("next", 0, 100*mi, 0))
	h := newWorkerHarness(t, memorySpec, pods, nil)
	h.step(memoryObs(50 * mi))
	h.clk.Step(DefaultPodGoneTimeout - time.Millisecond)
	h.step(memoryObs(50 * mi))
	h.step(memoryObs(50 * mi))
	h.wantEvicted("before the timeout", "stuck")
	h.clk.Step(time.Millisecond)
	h.step(memoryObs(50 * mi)) // gives up waiting
	h.step(memoryObs(50 * mi))
	h.wantEvicted("after the timeout", "stuck", "stuck") // still the top of the ranking
}

// TestEvictionIgnoresStaleEvaluations: an evaluation that began before the worker's
// last action finished is not acted on.
func TestEvictionIgnoresStaleEvaluations(t *testing.T) {
	pods := newFakePods(memPod("a", 0, 500*mi, 0), memPod("b", 0, 400*mi, 0))
	h := newWorkerHarness(t, memorySpec, pods, nil)
	h.step(memoryObs(50 * mi))
	pods.markGone("a")
	seen := h.evaluate(memoryObs(50 * mi))
	inFlight := h.evaluate(memoryObs(50 * mi)) // began before the worker saw the pod go
	h.w.step(context.Background(), seen)
	h.w.step(context.Background(), inFlight)
	h.wantEvicted("stale evaluation", "a")
	h.step(memoryObs(50 * mi))
	h.wantEvicted("fresh evaluation", "a", "b")
}

// TestDiskReclaimBeforeEviction: for disk, node-level reclaim runs first and a pod is
// evicted only if a fresh evaluation after it still shows the threshold crossed.
func TestDiskReclaimBeforeEviction(t *testing.T) {
	pods := newFakePods(
		Pod{Namespace: "default", Name: "writer", Usage: Usage{EphemeralStorageBytes: 20 * gi}},
		Pod{Namespace: "default", Name: "memory-hog", Usage: Usage{MemoryBytes: 7 * gi}},
	)
	rec := &fakeReclaimer{}
	h := newWorkerHarness(t, ThresholdSpec{Hard: map[string]string{"nodefs.available": "10%"}}, pods, rec)
	disk := func(avail int64) Observations {
		return Observations{Nodefs: &FilesystemStats{CapacityBytes: uint64(100 * gi), AvailableBytes: uint64(avail)}}
	}

	h.step(disk(5 * gi))
	if got := rec.calls(); !slices.Equal(got, []Signal{SignalNodefsAvailable}) {
		t.Fatalf("reclaim calls %v, want one for nodefs.available", got)
	}
	h.wantEvicted("right after reclaim")
	h.step(disk(30 * gi)) // reclaim was enough
	h.wantEvicted("reclaim freed enough")

	h.step(disk(5 * gi)) // a new episode: reclaim again first
	h.step(disk(6 * gi)) // still crossed after it
	h.wantEvicted("reclaim was not enough", "writer")
	if got := rec.calls(); len(got) != 2 {
		t.Errorf("reclaim calls %v, want 2", got)
	}
	if msg := pods.messages[0]; !strings.Contains(msg, "low on resource: ephemeral-storage") || !strings.Contains(msg, "Pod was using 20Gi") {
		t.Errorf("eviction message %q", msg)
	}
}

func TestNoReclaimForMemory(t *testing.T) {
	rec := &fakeReclaimer{}
	h := newWorkerHarness(t, memorySpec, newFakePods(memPod("a", 0, gi, 0)), rec)
	h.step(memoryObs(50 * mi))
	h.wantEvicted("memory", "a")
	if got := rec.calls(); len(got) != 0 {
		t.Errorf("reclaim called for memory: %v", got)
	}
}

func TestEvictionWaitsForSoftGrace(t *testing.T) {
	h := newWorkerHarness(t, ThresholdSpec{
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]time.Duration{"memory.available": time.Minute},
	}, newFakePods(memPod("a", 0, gi, 0)), nil)
	h.step(memoryObs(500 * mi))
	h.clk.Step(59 * time.Second)
	h.step(memoryObs(500 * mi))
	h.wantEvicted("within the grace period")
	h.clk.Step(time.Second)
	h.step(memoryObs(500 * mi))
	h.wantEvicted("after the grace period", "a")
	if g := h.pods.graces[0]; g != PodGracePeriod {
		t.Errorf("a pod evicted for a soft threshold gets %s to stop, want its own grace period", g)
	}
}

func TestSoftEvictionGraceCappedByMaxPodGracePeriod(t *testing.T) {
	slow := memPod("slow", 0, gi, 0)
	slow.GracePeriod = 10 * time.Minute
	h := newWorkerHarness(t, ThresholdSpec{
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]time.Duration{"memory.available": time.Second},
	}, newFakePods(slow), nil)
	h.w.maxPodGrace = 45 * time.Second
	h.step(memoryObs(500 * mi))
	h.clk.Step(time.Second)
	h.step(memoryObs(500 * mi))
	h.wantEvicted("after the grace period", "slow")
	if g := h.pods.graces[0]; g != 45*time.Second {
		t.Errorf("a pod with 10m of grace evicted under evictionMaxPodGracePeriod 45s gets %s, want 45s", g)
	}
}

// evictionMaxPodGracePeriod caps a soft eviction's grace at the pod's own or the cap,
// whichever is shorter; a hard eviction ignores both.
func TestEvictionGracePeriodCap(t *testing.T) {
	soft := Threshold{Signal: SignalMemoryAvailable, GracePeriod: time.Minute}
	hard := Threshold{Signal: SignalMemoryAvailable}
	long := Pod{Name: "long", GracePeriod: 300 * time.Second}
	short := Pod{Name: "short", GracePeriod: 5 * time.Second}
	for _, c := range []struct {
		t    Threshold
		pod  Pod
		cap  time.Duration
		want time.Duration
	}{
		{soft, long, 0, PodGracePeriod},
		{soft, long, 30 * time.Second, 30 * time.Second},
		{soft, short, 30 * time.Second, PodGracePeriod},
		{hard, long, 30 * time.Second, HardEvictionGracePeriod},
		{hard, short, 0, HardEvictionGracePeriod},
	} {
		if got := evictionGracePeriod(c.t, c.pod, c.cap); got != c.want {
			t.Errorf("soft %v, pod grace %s, cap %s: grace %s, want %s", c.t.Soft(), c.pod.GracePeriod, c.cap, got, c.want)
		}
	}
}

func TestEvictionOrderAcrossSignals(t *testing.T) {
	pods := newFakePods(
		Pod{Namespace: "default", Name: "forker", Usage: Usage{Processes: 5000}},
		Pod{Namespace: "default", Name: "hog", Usage: Usage{MemoryBytes: 4 * gi}},
	)
	h := newWorkerHarness(t, ThresholdSpec{Hard: DefaultEvictionHard()}, pods, nil)
	obs := memoryObs(50 * mi)
	obs.PIDs = &PIDStats{PIDMax: 32768, Tasks: 32700}
	h.step(obs)
	h.wantEvicted("memory and PIDs both short: memory first", "hog")
}

func TestEvictionRetriesAfterError(t *testing.T) {
	pods := newFakePods(memPod("a", 0, gi, 0))
	pods.evictErr = errFake
	h := newWorkerHarness(t, memorySpec, pods, nil)
	h.step(memoryObs(50 * mi))
	h.wantEvicted("failing evictor")
	pods.mu.Lock()
	pods.evictErr = nil
	pods.mu.Unlock()
	h.step(memoryObs(50 * mi))
	h.wantEvicted("next evaluation", "a")
}

// TestManagerEvicts runs eviction through the manager: the first crossing evicts, the
// pod going leads to an immediate fresh evaluation (no clock step) and the next pod.
func TestManagerEvicts(t *testing.T) {
	pods := newFakePods(memPod("a", 0, 500*mi, 0), memPod("b", 0, 400*mi, 0))
	h := startManager(t, memoryObs(50*mi), Deps{Pods: pods, Evictor: pods})
	waitFor(t, "the first eviction", func() bool { return len(pods.evictions()) == 1 })
	pods.markGone("a")
	// Gone is checked on the next evaluation; the one after that is requested at once.
	h.clk.Step(time.Second)
	waitFor(t, "the second eviction", func() bool { return len(pods.evictions()) == 2 })
	if got := pods.evictions(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("evicted %v, want a then b", got)
	}
	if h.metric("plinth_eviction_evaluations_total", "trigger", string(TriggerEvictionStep)) < 1 {
		t.Error("no evaluation was requested by the eviction worker")
	}
	if n := h.metric("plinth_evictions", "eviction_signal", "memory.available"); n != 2 {
		t.Errorf("plinth_evictions{memory.available} = %v, want 2", n)
	}
	if !h.clk.Now().Equal(t0.Add(time.Second)) {
		t.Errorf("clock moved to %s", h.clk.Now())
	}
	if h.status(corev1.NodeMemoryPressure) != corev1.ConditionTrue {
		t.Error("MemoryPressure not True while evicting")
	}
}
