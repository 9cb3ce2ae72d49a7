//go:build linux

package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/daemon/pods/runc"
)

// fakeRuntime is the runc driver as garbage collection uses it: checkpoints by ID
// with whether they exited; the rest of ContainerRuntime is not called.
type fakeRuntime struct {
	mu      sync.Mutex
	cps     map[string]runc.Checkpoint
	exited  map[string]bool
	deleted []string
}

func (f *fakeRuntime) add(uid, name string, attempt int, exited bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("%s-%s-%d", uid, name, attempt)
	f.cps[id] = runc.Checkpoint{ID: id, CreatedAt: time.Unix(int64(1000+attempt), 0), Labels: map[string]string{
		"pod.uid": uid, "container.name": name, "container.attempt": fmt.Sprint(attempt)}}
	f.exited[id] = exited
}

func (f *fakeRuntime) List() ([]runc.Checkpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runc.Checkpoint
	for _, cp := range f.cps {
		out = append(out, cp)
	}
	return out, nil
}

func (f *fakeRuntime) ListWithIDPrefix(prefix string) ([]runc.Checkpoint, error) {
	all, err := f.List()
	var out []runc.Checkpoint
	for _, cp := range all {
		if strings.HasPrefix(cp.ID, prefix) {
			out = append(out, cp)
		}
	}
	return out, err
}

func (f *fakeRuntime) Exited(id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.cps[id]; !ok {
		return false, fmt.Errorf("container %s: %w", id, runc.ErrNotFound)
	}
	return f.exited[id], nil
}

func (f *fakeRuntime) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cps, id)
	f.deleted = append(f.deleted, id)
	return nil
}

func (f *fakeRuntime) Create(context.Context, runc.CreateOptions) (runc.Checkpoint, error) {
	return runc.Checkpoint{}, errors.New("not in this fake")
}
func (f *fakeRuntime) Start(context.Context, string) error { return errors.New("not in this fake") }
func (f *fakeRuntime) Wait(context.Context, string) (runc.ExitStatus, error) {
	return runc.ExitStatus{}, errors.New("not in this fake")
}
func (f *fakeRuntime) Stop(context.Context, string, unix.Signal, time.Duration) (runc.ExitStatus, error) {
	return runc.ExitStatus{}, errors.New("not in this fake")
}
func (f *fakeRuntime) Exec(context.Context, string, []string) ([]byte, int, error) {
	return nil, 0, errors.New("not in this fake")
}

// recorder notes the calls of the image service, network and cgroups fakes.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	sort.Strings(out)
	return out
}

type gcImages struct{ *recorder }

func (gcImages) EnsureImage(context.Context, ImageRequest) (Image, error) { return Image{}, nil }
func (gcImages) PrepareRootFS(string, string, string) (string, error)     { return "", nil }
func (i gcImages) RemoveRootFS(dir string) error {
	i.note("rootfs " + filepath.Base(filepath.Dir(filepath.Dir(dir))) + "/" + filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir))
	return nil
}

type gcNetwork struct{ *recorder }

func (gcNetwork) Setup(context.Context, string) (PodNetworkStatus, error) {
	return PodNetworkStatus{}, nil
}
func (n gcNetwork) Teardown(_ context.Context, uid string) error {
	n.note("network " + uid)
	return nil
}

type gcCgroups struct{ *recorder }

func (gcCgroups) Ensure(string, podcgroup.Resources) error { return nil }
func (c gcCgroups) Remove(uid string) error                { c.note("cgroup " + uid); return nil }

// gcPods answers containergc's questions: pods absent from states are deleted.
type gcPods struct {
	states map[types.UID]containergc.PodState
}

func (p gcPods) PodState(uid types.UID) containergc.PodState {
	st, ok := p.states[uid]
	if !ok {
		return containergc.PodState{Deleted: true}
	}
	return st
}
func (gcPods) AllSourcesReady() bool { return true }

type gcEnv struct {
	t       *testing.T
	rt      *fakeRuntime
	rec     *recorder
	sup     *Supervisor
	dir     string
	logs    string
	collect *containergc.Collector
}

func newGCEnv(t *testing.T, states map[types.UID]containergc.PodState) *gcEnv {
	dir := t.TempDir()
	rec := &recorder{}
	rt := &fakeRuntime{cps: map[string]runc.Checkpoint{}, exited: map[string]bool{}}
	cfg := &WorkerConfig{Runtime: rt, Images: gcImages{rec}, Network: gcNetwork{rec}, Cgroups: gcCgroups{rec},
		PodsDir: filepath.Join(dir, "pods"), LogsDir: filepath.Join(dir, "logs"), SandboxDir: filepath.Join(dir, "run"),
		Logger: slog.New(slog.DiscardHandler)}
	sup := NewSupervisor(cfg, nil)
	c, err := containergc.NewCollector(sup.Garbage(), gcPods{states}, containergc.Config{Policy: containergc.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	return &gcEnv{t: t, rt: rt, rec: rec, sup: sup, dir: dir, logs: cfg.LogsDir, collect: c}
}

// worker gives pod uid a worker, as far as garbage collection can tell.
func (e *gcEnv) worker(uid string) {
	e.sup.mu.Lock()
	defer e.sup.mu.Unlock()
	e.sup.workers[types.UID(uid)] = &supervised{}
}

func (e *gcEnv) file(path string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// logs writes log files for attempts of pod uid's container app, oldest first.
func (e *gcEnv) writeLogs(uid string, names ...string) {
	for _, n := range names {
		e.file(filepath.Join(e.logs, "default_"+uid+"_"+uid, "app", n))
	}
}

// left lists the files under the logs directory and the pods directory.
func (e *gcEnv) left(root string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(e.dir, root), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Join(e.dir, root), p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func (e *gcEnv) run(opts containergc.Options) containergc.Result {
	e.t.Helper()
	res, err := e.collect.Collect(context.Background(), opts)
	if err != nil {
		e.t.Fatalf("Collect: %v", err)
	}
	return res
}

func TestGarbageKeepsWhatPodsNeedAndRemovesTheRest(t *testing.T) {
	e := newGCEnv(t, map[types.UID]containergc.PodState{
		"live": {}, "crash": {}, "done": {Terminated: true}, "orphan": {Deleted: true},
	})
	// live runs its fourth instance (3): 0, 1 and 2 are dead, 2 (with a rotated file)
	// is what --previous shows.
	e.worker("live")
	e.writeLogs("live", "0.log", "1.log", "2.log.20261126-120000", "2.log", "3.log")
	e.rt.add("live", "app", 3, false)
	// crash waits in back-off after instance 2 exited (the worker removed its runc
	// state): 2 is current, 1 previous, 0 garbage.
	e.worker("crash")
	e.writeLogs("crash", "0.log", "1.log", "2.log")
	// done finished before this plinthd started: no worker; its last instance still
	// has runc state and a bundle with a root filesystem.
	e.writeLogs("done", "0.log", "1.log")
	e.rt.add("done", "app", 1, true)
	e.file(filepath.Join(e.dir, "pods", "done", "app", "1", "config.json"))
	e.file(filepath.Join(e.dir, "run", "done", "hostname"))
	// gone was deleted: its logs, sandbox and pod directory remain.
	e.writeLogs("gone", "0.log")
	e.file(filepath.Join(e.dir, "run", "gone", "hostname"))
	e.file(filepath.Join(e.dir, "pods", "gone", "volumes", "empty-dir", "v", "data"))
	// orphan's container still runs (a pod deleted while plinthd was down): nothing
	// of a running container is listed, and its sandbox holds.
	e.rt.add("orphan", "app", 0, false)
	e.file(filepath.Join(e.dir, "run", "orphan", "hostname"))

	dead, err := e.sup.Garbage().DeadContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range dead {
		ids = append(ids, c.ID)
	}
	if got, want := strings.Join(ids, " "), "crash-app-0 crash-app-1 done-app-0 done-app-1 gone-app-0 live-app-0 live-app-1 live-app-2"; got != want {
		t.Fatalf("DeadContainers = %s\nwant             %s", got, want)
	}

	if res := e.run(containergc.Options{}); res != (containergc.Result{Containers: 5, Sandboxes: 1, LogDirs: 1}) {
		t.Errorf("periodic collection = %+v", res)
	}
	want := []string{
		"default_crash_crash/app/1.log", "default_crash_crash/app/2.log",
		"default_done_done/app/1.log",
		"default_live_live/app/2.log", "default_live_live/app/2.log.20261126-120000", "default_live_live/app/3.log",
	}
	if got := e.left("logs"); !slices.Equal(got, want) {
		t.Errorf("logs left:\n  %v\nwant\n  %v", got, want)
	}
	if got := e.left("run"); !slices.Equal(got, []string{"done/hostname", "orphan/hostname"}) {
		t.Errorf("sandboxes left: %v; gone's must go, done's and orphan's hold containers", got)
	}
	if got := e.rec.take(); !slices.Equal(got, []string{"cgroup gone", "network gone", "rootfs gone/volumes/empty-dir"}) {
		t.Errorf("calls = %v; want gone's network and cgroup removed", got)
	}
	if len(e.rt.deleted) != 0 {
		t.Errorf("runc deletes %v; done's last instance is kept while the pod exists", e.rt.deleted)
	}

	// Disk pressure: every dead instance of the terminated pod goes, runc state, root
	// filesystem and bundle included, then its sandbox; running and current ones stay.
	if res := e.run(containergc.Options{EvictTerminatedPods: true}); res != (containergc.Result{Containers: 1, Sandboxes: 1}) {
		t.Errorf("collection under disk pressure = %+v", res)
	}
	if !slices.Equal(e.rt.deleted, []string{"done-app-1"}) {
		t.Errorf("runc deletes %v, want done-app-1", e.rt.deleted)
	}
	if got := e.rec.take(); !slices.Equal(got, []string{"cgroup done", "network done", "rootfs done/app/1"}) {
		t.Errorf("calls = %v", got)
	}
	if got := e.left("pods"); len(got) != 0 {
		t.Errorf("pod directories left: %v", got)
	}
	if _, ok := e.rt.cps["orphan-app-0"]; !ok {
		t.Error("the running container was removed")
	}
	// Idempotent: nothing more to do.
	if res := e.run(containergc.Options{EvictTerminatedPods: true}); res != (containergc.Result{}) {
		t.Errorf("second collection = %+v", res)
	}
}

func TestGarbageRefusesWhatAWorkerOrARunningContainerHolds(t *testing.T) {
	e := newGCEnv(t, nil)
	g := e.sup.Garbage()
	ctx := context.Background()
	e.rt.add("p", "app", 0, false)
	if err := g.RemoveContainer(ctx, containergc.Container{ID: "p-app-0", PodUID: "p", Name: "app"}); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Errorf("removing a running container: %v", err)
	}
	e.rt.add("w", "app", 0, true)
	e.worker("w")
	if err := g.RemoveContainer(ctx, containergc.Container{ID: "w-app-0", PodUID: "w", Name: "app"}); !errors.Is(err, errOwned) {
		t.Errorf("removing runc state a worker holds: %v", err)
	}
	e.file(filepath.Join(e.dir, "run", "w", "hostname"))
	if err := g.RemoveSandbox(ctx, containergc.Sandbox{ID: "w", PodUID: "w"}); !errors.Is(err, errOwned) {
		t.Errorf("removing a worker's sandbox: %v", err)
	}
	if err := g.RemovePodLogDir(ctx, containergc.PodLogDir{PodUID: "w", Path: filepath.Join(e.logs, "default_w_w")}); !errors.Is(err, errOwned) {
		t.Errorf("removing a worker's logs: %v", err)
	}
	if err := g.RemovePodLogDir(ctx, containergc.PodLogDir{PodUID: "x", Path: "/etc"}); err == nil {
		t.Error("removed a directory outside the log root")
	}
	if err := g.RemoveContainer(ctx, containergc.Container{ID: "../../etc", PodUID: "p", Name: "app"}); err == nil {
		t.Error("accepted a container ID that is no run of the named container")
	}
	if len(e.rt.deleted) != 0 {
		t.Errorf("runc deletes %v", e.rt.deleted)
	}
}

func TestGarbageImagesInUseReadsContainerRoots(t *testing.T) {
	e := newGCEnv(t, nil)
	marker := filepath.Join(e.dir, "pods", "p", "app", "0", "rootfs.json")
	e.file(marker)
	if err := os.WriteFile(marker, []byte(`{"containerID":"p-app-0","imageID":"sha256:abc","mode":"overlay"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.file(filepath.Join(e.dir, "pods", "p", "volumes", "empty-dir", "data"))
	used, err := e.sup.Garbage().ImagesInUse()
	if err != nil || len(used) != 1 || !used["sha256:abc"] {
		t.Errorf("ImagesInUse = %v, %v; want sha256:abc", used, err)
	}
}

func TestLogFileAttempt(t *testing.T) {
	for name, want := range map[string]string{
		"0.log": "0 true true", "12.log": "12 true true", "3.log.20261126-120000": "3 false true",
		"x.log": "0 false false", "1.logx": "0 false false", ".log": "0 false false", "1.txt": "0 false false",
	} {
		n, live, ok := logFileAttempt(name)
		if got := fmt.Sprint(n, live, ok); got != want {
			t.Errorf("logFileAttempt(%q) = %s, want %s", name, got, want)
		}
	}
}

// Over runc and real workers: a crash-looping container's older logs go, its current
// and previous ones stay while the pod runs; once the pod is deleted its log
// directory goes.
func TestGarbageOverRealWorkers(t *testing.T) {
	e := newWorkerEnv(t)
	gone := make(chan types.UID, 1)
	s := NewSupervisor(e.cfg, func(uid types.UID) { gone <- uid })
	t.Cleanup(s.Shutdown)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gc", Namespace: "ns", UID: types.UID("99999999-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "echo crashing; exit 2"}}}}}
	s.Sync([]*corev1.Pod{pod})
	for restarts := 0; restarts < 3; restarts++ {
		e.until(t, 0, fmt.Sprintf("crash %d", restarts+1), func(st corev1.PodStatus) bool {
			w := st.ContainerStatuses
			return len(w) == 1 && int(w[0].RestartCount) == restarts && w[0].State.Waiting != nil && w[0].State.Waiting.Reason == "CrashLoopBackOff"
		})
		if restarts < 2 {
			e.clk.Step(MaxBackoff)
		}
	}
	states := gcPods{states: map[types.UID]containergc.PodState{pod.UID: {}}}
	c, err := containergc.NewCollector(s.Garbage(), states, containergc.Config{Policy: containergc.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Collect(context.Background(), containergc.Options{}); err != nil || res.Containers != 1 {
		t.Errorf("Collect = %+v, %v; want the oldest run removed", res, err)
	}
	logDir := filepath.Join(e.cfg.LogsDir, "ns_gc_"+string(pod.UID))
	left, _ := filepath.Glob(filepath.Join(logDir, "c", "*"))
	for i := range left {
		left[i] = filepath.Base(left[i])
	}
	if !slices.Equal(left, []string{"1.log", "2.log"}) {
		t.Errorf("logs left %v, want the previous and the current run's", left)
	}
	deleted := pod.DeepCopy()
	zero := int64(0)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now()}, &zero
	s.Sync([]*corev1.Pod{deleted})
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("pod not gone within 30s")
	}
	delete(states.states, pod.UID)
	if res, err := c.Collect(context.Background(), containergc.Options{}); err != nil || res.LogDirs != 1 {
		t.Errorf("Collect after the deletion = %+v, %v; want the log directory removed", res, err)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("%s survived: %v", logDir, err)
	}
}
