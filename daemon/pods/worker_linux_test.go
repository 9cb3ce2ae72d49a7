//go:build linux

package pods

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/pods/bundle"
	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/daemon/pods/runc"
	"github.com/plinth/plinth/daemon/pods/shim"
	"github.com/plinth/plinth/daemon/seccomp"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

const testShimEnv = "PLINTH_PODS_TEST_SHIM"

func TestMain(m *testing.M) {
	if os.Getenv(testShimEnv) == "1" {
		i := slices.Index(os.Args, "--")
		os.Exit(shim.Main(os.Args[i+1:]))
	}
	os.Exit(m.Run())
}

// busyboxImages is an ImageService whose every image is a busybox root filesystem.
type busyboxImages struct {
	t           *testing.T
	failedPulls *atomic.Int32
}

func (b busyboxImages) EnsureImage(_ context.Context, req ImageRequest) (Image, error) {
	if req.Image == "missing" {
		b.failedPulls.Add(1)
		return Image{}, &ImagePullError{Reason: "ErrImagePull", Err: fmt.Errorf("image %q: manifest unknown", req.Image)}
	}
	return Image{ID: "sha256:busybox", Config: bundle.ImageConfig{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}}}, nil
}
func (b busyboxImages) PrepareRootFS(_, _, dir string) (string, error) {
	rootfs := filepath.Join(dir, "rootfs")
	podtest.BusyboxRootfs(b.t, rootfs)
	return rootfs, nil
}
func (b busyboxImages) RemoveRootFS(string) error { return nil }

// netnsNetwork gives every pod the test's network namespace.
type netnsNetwork struct{ path string }

func (n netnsNetwork) Setup(context.Context, string) (PodNetworkStatus, error) {
	return PodNetworkStatus{NetNSPath: n.path, IPs: []string{"10.88.0.2"}}, nil
}
func (n netnsNetwork) Teardown(context.Context, string) error { return nil }

type statusLog struct {
	mu   sync.Mutex
	last corev1.PodStatus
	n    int
}

func (s *statusLog) report(_ *corev1.Pod, st corev1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.n = st, s.n+1
}

func (s *statusLog) get() corev1.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.last.DeepCopy()
}

type workerEnv struct {
	runcCfg runc.Config
	cfg     *WorkerConfig
	clk     *clocktesting.FakeClock
	status  *statusLog
}

func newWorkerEnv(t *testing.T) *workerEnv {
	kerneltest.Require(t, kerneltest.Root, kerneltest.Runc, cgrouptest.Cgroups, podtest.Busybox)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	parent := podtest.CgroupParent(t)
	ns := kerneltest.NewNetNS(t)
	runcCfg := runc.Config{Root: filepath.Join(dir, "runc"), StateDir: filepath.Join(dir, "checkpoints"),
		ShimCommand: []string{"/usr/bin/env", testShimEnv + "=1", exe, "-test.run=^$", "--"}}
	d, err := runc.New(runcCfg, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	limits, err := runc.RuntimeLimits()
	if err != nil {
		t.Fatal(err)
	}
	host, err := cgroup.DetectHost()
	if err != nil {
		t.Fatal(err)
	}
	e := &workerEnv{runcCfg: runcCfg, clk: clocktesting.NewFakeClock(time.Now()), status: &statusLog{}}
	e.cfg = &WorkerConfig{
		Runtime: d, Images: busyboxImages{t, &atomic.Int32{}}, Network: netnsNetwork{ns.Path}, Cgroups: podcgroup.Manager{Parent: parent},
		CgroupParent: parent, PodsDir: filepath.Join(dir, "pods"), LogsDir: filepath.Join(dir, "logs"),
		SandboxDir: filepath.Join(dir, "run"), ResolvConf: []byte("nameserver 10.96.0.10\n"), ClusterDomain: "cluster.local",
		HostIPs: []string{"192.168.0.2"}, NodeMemoryBytes: 1 << 30, NodeMilliCPU: 2000, PodPidsLimit: 100,
		Limits: limits, CgroupNamespace: host.Mode == cgroup.Unified, Prober: Prober{Exec: d, UserAgent: "kube-probe/test"},
		Clock: e.clk, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Report: e.status.report,
	}
	return e
}

// run starts a worker for pod and returns a function that stops Run and terminates the
// pod (also registered as cleanup).
func (e *workerEnv) run(t *testing.T, pod *corev1.Pod) (*PodWorker, func()) {
	w, halt := e.runOnly(t, pod)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			halt()
			if err := w.Terminate(context.Background()); err != nil {
				t.Errorf("Terminate: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// runOnly starts a worker and returns a function that stops Run only, leaving the
// containers running as a plinthd shutdown does.
func (e *workerEnv) runOnly(t *testing.T, pod *corev1.Pod) (*PodWorker, func()) {
	w := NewPodWorker(e.cfg, pod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	halt := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(halt)
	return w, halt
}

// until steps the fake clock by step and polls the reported status until ok, for 20 s
// of real time at most.
func (e *workerEnv) until(t *testing.T, step time.Duration, what string, ok func(corev1.PodStatus) bool) corev1.PodStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s := e.status.get(); ok(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
		e.clk.Step(step)
	}
	t.Fatalf("%s: not reached after 20s; last status %+v", what, e.status.get())
	return corev1.PodStatus{}
}

func condTrue(s corev1.PodStatus, c corev1.PodConditionType) bool {
	for _, x := range s.Conditions {
		if x.Type == c {
			return x.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestWorkerRunsInitThenAppUntilReadyAndTerminates(t *testing.T) {
	e := newWorkerEnv(t)
	grace := int64(1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("11111111-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh", "-c", "echo init-ran > /data/init"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				Command:        []string{"sh", "-c", "cat /data/init; touch /tmp/ready; exec sleep 1000"},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	_, stop := e.run(t, pod)
	s := e.until(t, time.Second, "Ready", func(s corev1.PodStatus) bool { return condTrue(s, corev1.PodReady) })
	if s.Phase != corev1.PodRunning || s.PodIP != "10.88.0.2" || s.InitContainerStatuses[0].State.Terminated == nil ||
		s.InitContainerStatuses[0].State.Terminated.Reason != "Completed" || !s.ContainerStatuses[0].Ready {
		t.Errorf("ready pod status: %+v", s)
	}
	logDir := filepath.Join(e.cfg.LogsDir, "ns_web_"+string(pod.UID), "app")
	b, err := os.ReadFile(filepath.Join(logDir, "0.log"))
	if err != nil || !strings.Contains(string(b), " stdout F init-ran") {
		t.Errorf("app log = %q, %v; want the init container's file from the shared emptyDir", b, err)
	}
	start := time.Now()
	stop()
	// sleep as PID 1 ignores SIGTERM: SIGKILL comes after the 1 s grace period.
	if took := time.Since(start); took < time.Second {
		t.Errorf("terminate took %v, less than the grace period", took)
	}
	final := e.status.get()
	if term := final.ContainerStatuses[0].State.Terminated; term == nil || term.Signal != 9 {
		t.Errorf("terminated app: %+v", final.ContainerStatuses[0].State)
	}
	cg, _ := podcgroup.Path(e.cfg.CgroupParent, string(pod.UID))
	if dir, err := (cgroup.Host{Mode: cgroup.Hybrid, Root: cgroup.DefaultRoot}).Dir("memory", cg); err == nil {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("pod cgroup %s remains after Terminate", dir)
		}
	}
	if _, err := os.Stat(filepath.Join(e.cfg.PodsDir, string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("pod directory remains after Terminate: %v", err)
	}
}

func TestWorkerCrashLoopBacksOffAndRestarts(t *testing.T) {
	e := newWorkerEnv(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "ns", UID: types.UID("66666666-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "echo crashing; exit 2"}}}}}
	e.run(t, pod)
	// Without stepping the clock the container crashes once and waits out 10 s.
	s := e.until(t, 0, "CrashLoopBackOff", func(s corev1.PodStatus) bool {
		w := s.ContainerStatuses
		return len(w) == 1 && w[0].State.Waiting != nil && w[0].State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := s.ContainerStatuses[0]
	if cs.RestartCount != 0 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 || s.Phase != corev1.PodRunning {
		t.Errorf("after the first crash: %+v phase %s", cs, s.Phase)
	}
	e.clk.Step(InitialBackoff)
	s = e.until(t, 0, "second crash", func(s corev1.PodStatus) bool {
		w := s.ContainerStatuses[0]
		return w.RestartCount == 1 && w.State.Waiting != nil && w.State.Waiting.Reason == "CrashLoopBackOff"
	})
	if msg := s.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "back-off 20s") {
		t.Errorf("second backoff message %q, want 20s", msg)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.LogsDir, "ns_crash_"+string(pod.UID), "c", "1.log")); err != nil {
		t.Errorf("no log file for the restart: %v", err)
	}
}

func TestWorkerAdoptsContainersAfterRestart(t *testing.T) {
	e := newWorkerEnv(t)
	grace := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "ns", UID: types.UID("77777777-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"true"}}},
			Containers:     []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "1000"}}}}}
	first, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Metrics = first
	_, halt := e.runOnly(t, pod)
	running := func(s corev1.PodStatus) bool {
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Running != nil
	}
	before := e.until(t, 0, "Running", running)
	// The first plinthd started the pod: one start, and the init and app containers'
	// operations.
	if n := observations(t, first.podStart); n != 1 {
		t.Errorf("pod starts recorded = %d, want 1", n)
	}
	for op, want := range map[string]uint64{OpRunPodSandbox: 1, OpPullImage: 2, OpCreateContainer: 2, OpStartContainer: 2} {
		if n := observations(t, first.operations.WithLabelValues(op).(prometheus.Histogram)); n != want {
			t.Errorf("%s observations = %d, want %d", op, n, want)
		}
	}
	id := strings.TrimPrefix(before.ContainerStatuses[0].ContainerID, ContainerIDPrefix)
	d := e.cfg.Runtime.(*runc.Driver)
	st, err := d.State(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	halt() // plinthd stops; the container must not

	// A new plinthd: a new driver over the same state, a new worker for the same pod.
	d2, err := runc.New(e.runcCfg, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Runtime = d2
	e.cfg.Prober.Exec = d2
	e.status = &statusLog{}
	e.cfg.Report = e.status.report
	second, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Metrics = second
	_, stop := e.run(t, pod)
	after := e.until(t, 0, "Running again", running)
	if n := observations(t, second.podStart); n != 0 {
		t.Errorf("the adopting plinthd recorded %d pod starts, want 0 (the start was the previous one's)", n)
	}
	if got := after.ContainerStatuses[0]; got.ContainerID != before.ContainerStatuses[0].ContainerID || got.RestartCount != 0 {
		t.Errorf("after the restart the app is %s with %d restarts, want %s with 0", got.ContainerID, got.RestartCount, before.ContainerStatuses[0].ContainerID)
	}
	if is := after.InitContainerStatuses[0]; is.State.Terminated == nil || is.State.Terminated.Reason != "Completed" {
		t.Errorf("init container after the restart: %+v (it must not run again)", is.State)
	}
	st2, err := d2.State(context.Background(), id)
	if err != nil || st2.Pid != st.Pid || st2.Status != "running" {
		t.Errorf("after the restart the container is %+v, %v; want still running as pid %d", st2, err, st.Pid)
	}
	stop()
}

func TestSupervisorStartsDeletesAndRemovesOrphans(t *testing.T) {
	e := newWorkerEnv(t)
	gone := make(chan types.UID, 4)
	s := NewSupervisor(e.cfg, func(uid types.UID) { gone <- uid })
	t.Cleanup(s.Shutdown)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sup", Namespace: "ns", UID: types.UID("88888888-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "1000"}}}}}
	s.Sync([]*corev1.Pod{pod})
	s.Sync([]*corev1.Pod{pod}) // idempotent: still one worker
	e.until(t, 0, "Running", func(st corev1.PodStatus) bool {
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil
	})
	deleted := pod.DeepCopy()
	zero := int64(0)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now()}, &zero
	s.Sync([]*corev1.Pod{deleted})
	select {
	case uid := <-gone:
		if uid != pod.UID {
			t.Errorf("gone(%s), want %s", uid, pod.UID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the deleted pod was not gone after 20s")
	}
	if term := e.status.get().ContainerStatuses[0].State.Terminated; term == nil {
		t.Errorf("final status of the deleted pod: %+v", e.status.get().ContainerStatuses[0].State)
	}
	// Until the confirmation lands the API keeps listing the pod: later Syncs must not
	// terminate it again (each did, and each confirmation was another DELETE: a
	// hundred pods deleted together made thousands), only confirm it again after
	// reconfirmAfter.
	s.Sync([]*corev1.Pod{deleted})
	if s.Running(pod.UID) {
		t.Error("a pod already terminated and confirmed gone got a worker again")
	}
	e.clk.Step(reconfirmAfter)
	s.Sync([]*corev1.Pod{deleted})
	select {
	case uid := <-gone:
		if uid != pod.UID {
			t.Errorf("confirmed again gone(%s), want %s", uid, pod.UID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a terminated pod still listed after reconfirmAfter was not confirmed again")
	}
	s.Sync(nil)
	s.mu.Lock()
	if len(s.confirmed) != 0 {
		t.Errorf("confirmed pods no longer listed are kept: %v", s.confirmed)
	}
	s.mu.Unlock()

	// A pod started, then plinthd stops (its containers stay) and the pod is deleted
	// meanwhile: the next plinthd removes the orphan.
	orphan := pod.DeepCopy()
	orphan.UID, orphan.Name = "99999999-2222-3333-4444-555555555555", "orphan"
	s2 := NewSupervisor(e.cfg, nil)
	s2.Sync([]*corev1.Pod{orphan})
	e.until(t, 0, "orphan Running", func(st corev1.PodStatus) bool {
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil && st.PodIP != "" &&
			strings.Contains(st.ContainerStatuses[0].ContainerID, string(orphan.UID))
	})
	s2.Shutdown()
	list, err := e.cfg.Runtime.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("after shutdown the runtime has %+v, %v; want the orphan's container still there", list, err)
	}
	// The pod is still listed but being deleted when the next plinthd starts: that one
	// never ran a worker for it, yet stops its container and confirms it gone.
	deletedWhileDown := orphan.DeepCopy()
	deletedWhileDown.DeletionTimestamp, deletedWhileDown.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now()}, &zero
	s3 := NewSupervisor(e.cfg, func(uid types.UID) { gone <- uid })
	t.Cleanup(s3.Shutdown)
	s3.Sync([]*corev1.Pod{deletedWhileDown})
	select {
	case uid := <-gone:
		if uid != orphan.UID {
			t.Errorf("gone(%s), want %s", uid, orphan.UID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pod deleted while plinthd was down was not gone after 20s")
	}
	if list, err := e.cfg.Runtime.List(); err != nil || len(list) != 0 {
		t.Errorf("after terminating the pod deleted while plinthd was down the runtime has %+v, %v", list, err)
	}
	// And an orphan proper (not listed at all) goes through RemoveOrphans.
	s2 = NewSupervisor(e.cfg, nil)
	s2.Sync([]*corev1.Pod{orphan})
	e.until(t, 0, "orphan Running again", func(st corev1.PodStatus) bool {
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil && st.PodIP != ""
	})
	s2.Shutdown()
	if err := NewSupervisor(e.cfg, nil).RemoveOrphans(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if list, err := e.cfg.Runtime.List(); err != nil || len(list) != 0 {
		t.Errorf("after RemoveOrphans the runtime has %+v, %v", list, err)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.SandboxDir, string(orphan.UID))); !os.IsNotExist(err) {
		t.Errorf("orphan sandbox remains: %v", err)
	}
}

func TestSupervisorEvictsWithoutConfirmingDeletion(t *testing.T) {
	e := newWorkerEnv(t)
	gone := make(chan types.UID, 1)
	s := NewSupervisor(e.cfg, func(uid types.UID) { gone <- uid })
	t.Cleanup(s.Shutdown)
	// The pod's own grace period is long and its container ignores SIGTERM: only the
	// eviction's grace period (1 s, as for a hard threshold) lets it go in time.
	grace := int64(60)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "evictme", Namespace: "ns", UID: types.UID("77777777-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}}}}}
	s.Sync([]*corev1.Pod{pod})
	e.until(t, 0, "Running", func(st corev1.PodStatus) bool {
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil
	})
	if got := s.Pods(); len(got) != 1 || got[0].UID != pod.UID {
		t.Fatalf("Pods() of a supervisor running one pod = %v", got)
	}
	evicted := make(chan corev1.PodStatus, 1)
	began := time.Now()
	if !s.Evict(pod.UID, time.Second, func(p *corev1.Pod, last corev1.PodStatus) { evicted <- last }) {
		t.Fatal("Evict of a running pod returned false")
	}
	if got := s.Pods(); len(got) != 0 {
		t.Errorf("Pods() lists %d pods while the only one is being evicted; want none (it may not be chosen again)", len(got))
	}
	if s.Evict(pod.UID, time.Second, nil) {
		t.Error("a second Evict while the first is under way returned true")
	}
	select {
	case last := <-evicted:
		if cs := last.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil {
			t.Errorf("last status after eviction: %+v", last)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the evicted pod's containers were not gone after 20s (the pod's own grace period is 60s; the eviction's 1s)")
	}
	t.Logf("evicted with a 1s grace period in %s", time.Since(began).Round(time.Millisecond))
	if s.Running(pod.UID) {
		t.Error("the evicted pod still has a worker")
	}
	if list, err := e.cfg.Runtime.List(); err != nil || len(list) != 0 {
		t.Errorf("after eviction the runtime has %+v, %v", list, err)
	}
	select {
	case uid := <-gone:
		t.Errorf("eviction confirmed the deletion of %s; the pod stays in the API as Failed", uid)
	default:
	}
}

func TestWorkerSeccompLocalhostProfiles(t *testing.T) {
	e := newWorkerEnv(t)
	kerneltest.Require(t, kerneltest.Seccomp)
	root := t.TempDir()
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}`
	if err := os.WriteFile(filepath.Join(root, "deny-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg.Seccomp = seccomp.New(seccomp.Config{Root: root})
	localhost := func(name string) *corev1.SecurityContext {
		return &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns", UID: types.UID("aaaaaaaa-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{
			{Name: "denied", Image: "busybox", SecurityContext: localhost("deny-mkdir.json"),
				Command: []string{"sh", "-c", "mkdir /tmp/x || echo mkdir-denied; echo other-syscalls-work"}},
			{Name: "missing", Image: "busybox", SecurityContext: localhost("no-such.json"), Command: []string{"true"}},
		}}}
	e.run(t, pod)
	s := e.until(t, 0, "denied done, missing failed", func(s corev1.PodStatus) bool {
		c := s.ContainerStatuses
		return len(c) == 2 && c[0].State.Terminated != nil && c[1].State.Waiting != nil && c[1].State.Waiting.Reason == "CreateContainerError"
	})
	if msg := s.ContainerStatuses[1].State.Waiting.Message; !strings.Contains(msg, filepath.Join(root, "no-such.json")) {
		t.Errorf("CreateContainerError message %q does not name the profile", msg)
	}
	b, err := os.ReadFile(filepath.Join(e.cfg.LogsDir, "ns_sec_"+string(pod.UID), "denied", "0.log"))
	if err != nil || !strings.Contains(string(b), "stdout F mkdir-denied") || !strings.Contains(string(b), "stdout F other-syscalls-work") {
		t.Errorf("denied container log %q, %v: want mkdir refused and the rest working", b, err)
	}
}

func TestWorkerImagePullFailureBacksOff(t *testing.T) {
	e := newWorkerEnv(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: "ns", UID: types.UID("bbbbbbbb-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "missing"}}}}
	e.run(t, pod)
	s := e.until(t, 0, "ImagePullBackOff", func(s corev1.PodStatus) bool {
		c := s.ContainerStatuses
		return len(c) == 1 && c[0].State.Waiting != nil && c[0].State.Waiting.Reason == "ImagePullBackOff"
	})
	if msg := s.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "manifest unknown") || s.Phase != corev1.PodPending {
		t.Errorf("pull failure: phase %s, message %q", s.Phase, msg)
	}
	pulls := e.cfg.Images.(busyboxImages).failedPulls
	if n := pulls.Load(); n != 1 {
		t.Errorf("%d pulls before the backoff expired, want 1", n)
	}
	e.clk.Step(InitialBackoff)
	e.until(t, 0, "a second pull after the backoff", func(corev1.PodStatus) bool { return pulls.Load() == 2 })
}

func TestWorkerRestartsContainerFailingLiveness(t *testing.T) {
	e := newWorkerEnv(t)
	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "ns", UID: types.UID("cccccccc-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Command: []string{"sh", "-c", "touch /tmp/alive; exec sleep 1000"},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/alive"}}},
				PeriodSeconds: 1, FailureThreshold: 2, InitialDelaySeconds: 1}}}}}
	e.run(t, pod)
	s := e.until(t, 0, "Running", func(s corev1.PodStatus) bool {
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Running != nil
	})
	id := strings.TrimPrefix(s.ContainerStatuses[0].ContainerID, ContainerIDPrefix)
	// Alive while the file exists.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, code, err := e.cfg.Runtime.Exec(context.Background(), id, []string{"cat", "/tmp/alive"})
		if err == nil && code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/tmp/alive never appeared: %q %d %v", out, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.clk.Step(time.Second)
	e.clk.Step(time.Second)
	if got := e.status.get().ContainerStatuses[0]; got.RestartCount != 0 || got.State.Running == nil {
		t.Fatalf("a passing liveness probe disturbed the container: %+v", got)
	}
	if _, code, err := e.cfg.Runtime.Exec(context.Background(), id, []string{"rm", "/tmp/alive"}); err != nil || code != 0 {
		t.Fatalf("rm /tmp/alive: %d %v", code, err)
	}
	s = e.until(t, time.Second, "restarted after the liveness failure", func(s corev1.PodStatus) bool {
		c := s.ContainerStatuses[0]
		return c.RestartCount == 1 && c.State.Running != nil
	})
	last := s.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 137 || last.Reason != "Error" {
		t.Errorf("last state after the liveness kill: %+v", last)
	}
}

// flakyNetwork fails its first Setup.
type flakyNetwork struct {
	netnsNetwork
	calls *atomic.Int32
}

func (n flakyNetwork) Setup(ctx context.Context, uid string) (PodNetworkStatus, error) {
	if n.calls.Add(1) == 1 {
		return PodNetworkStatus{}, fmt.Errorf("bridge not ready")
	}
	return n.netnsNetwork.Setup(ctx, uid)
}

func TestWorkerRetriesPodSetup(t *testing.T) {
	e := newWorkerEnv(t)
	calls := &atomic.Int32{}
	e.cfg.Network = flakyNetwork{e.cfg.Network.(netnsNetwork), calls}
	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "retry", Namespace: "ns", UID: types.UID("dddddddd-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "1000"}}}}}
	e.run(t, pod)
	s := e.until(t, 0, "Pending after the failed setup", func(s corev1.PodStatus) bool { return len(s.ContainerStatuses) == 1 })
	if s.Phase != corev1.PodPending || s.ContainerStatuses[0].State.Waiting == nil || s.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("status after a failed setup: phase %s, %+v", s.Phase, s.ContainerStatuses[0].State)
	}
	e.until(t, time.Second, "Running after the retry", func(s corev1.PodStatus) bool {
		return s.ContainerStatuses[0].State.Running != nil
	})
	if n := calls.Load(); n != 2 {
		t.Errorf("network Setup called %d times, want 2", n)
	}
}

// Kill's grace period override replaces the pod's own: a container that ignores
// SIGTERM in a pod granting 300s is gone soon after the 1s override, and Pods no
// longer lists the pod from the moment it is being killed. Kill's Status adjusts
// every status reported from then on, so a container exiting 0 never makes the pod
// Succeeded first.
func TestSupervisorKillWithGracePeriodOverrideAndStatus(t *testing.T) {
	e := newWorkerEnv(t)
	var reported []corev1.PodStatus
	var mu sync.Mutex
	killing := atomic.Bool{}
	e.cfg.Report = func(_ *corev1.Pod, st corev1.PodStatus) {
		e.status.report(nil, st)
		if killing.Load() {
			mu.Lock()
			reported = append(reported, st)
			mu.Unlock()
		}
	}
	s := NewSupervisor(e.cfg, nil)
	t.Cleanup(s.Shutdown)
	grace := int64(300)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stubborn", Namespace: "ns", UID: types.UID("88888888-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{
				{Name: "stubborn", Image: "busybox", Command: []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}},
				{Name: "polite", Image: "busybox", Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}},
			}}}
	s.Sync([]*corev1.Pod{pod})
	e.until(t, 0, "Running", func(st corev1.PodStatus) bool {
		return len(st.ContainerStatuses) == 2 && st.ContainerStatuses[0].State.Running != nil && st.ContainerStatuses[1].State.Running != nil
	})
	if got := s.Pods(); len(got) != 1 || got[0].UID != pod.UID {
		t.Fatalf("Pods() = %v, want the running pod", got)
	}
	override := time.Second
	killed := make(chan corev1.PodStatus, 1)
	start := time.Now()
	killing.Store(true)
	opts := KillOptions{GracePeriodOverride: &override, Status: func(st *corev1.PodStatus) {
		st.Phase, st.Reason = corev1.PodFailed, "Terminated"
	}}
	if !s.Kill(pod.UID, opts, func(_ *corev1.Pod, last corev1.PodStatus) { killed <- last }) {
		t.Fatal("Kill of a running pod returned false")
	}
	if got := s.Pods(); len(got) != 0 {
		t.Errorf("Pods() lists %d pods being killed", len(got))
	}
	select {
	case last := <-killed:
		// The bound is the feature: 1s, not the pod's 300s; generous for a loaded machine.
		if took := time.Since(start); took > 60*time.Second {
			t.Errorf("the pod took %v to stop with a 1s override", took)
		}
		if last.Phase != corev1.PodFailed || last.Reason != "Terminated" {
			t.Errorf("last status %s/%s, want Failed/Terminated", last.Phase, last.Reason)
		}
		for _, cs := range last.ContainerStatuses {
			if cs.State.Terminated == nil {
				t.Errorf("container %s not terminated in the last status: %+v", cs.Name, cs.State)
			} else if cs.Name == "stubborn" && cs.State.Terminated.Signal != 9 && cs.State.Terminated.ExitCode != 137 {
				t.Errorf("stubborn container %+v, want it SIGKILLed", cs.State.Terminated)
			}
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the pod was not gone 90s after a kill with a 1s grace period override")
	}
	mu.Lock()
	defer mu.Unlock()
	// Until Run returns the worker may still report the pod Running; no terminal
	// status but the adjusted one may appear.
	for _, st := range reported {
		if (st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed) && (st.Phase != corev1.PodFailed || st.Reason != "Terminated") {
			t.Errorf("a status reported during the kill is %s/%s, not adjusted", st.Phase, st.Reason)
		}
	}
	if len(reported) == 0 {
		t.Error("no status reported during the kill")
	}
}
