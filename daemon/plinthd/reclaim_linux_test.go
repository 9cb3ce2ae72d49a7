//go:build linux

package plinthd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/containergc"
	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/daemon/pods"
	"github.com/plinth/plinth/daemon/pods/runc"
	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/internal/kerneltest"
)

func gcTestPod(uid string, phase corev1.PodPhase, image string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: "default", Name: uid},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func TestGCPodStates(t *testing.T) {
	sup := pods.NewSupervisor(&pods.WorkerConfig{Logger: slog.New(slog.DiscardHandler)}, nil)
	evicted := map[types.UID]bool{"evicted": true}
	s := newGCPodStates(sup, func(uid types.UID) bool { return evicted[uid] })
	if s.AllSourcesReady() || s.PodState("gone").Deleted {
		t.Error("ready, or a pod deleted, before any list")
	}
	s.update(nil, false)
	if s.PodState("gone").Deleted {
		t.Error("a pod deleted before every source was read")
	}
	s.update([]*corev1.Pod{gcTestPod("running", corev1.PodRunning, "a"), gcTestPod("done", corev1.PodSucceeded, "b"),
		gcTestPod("evicted", corev1.PodRunning, "c")}, true)
	for uid, want := range map[types.UID]containergc.PodState{
		"running": {}, "done": {Terminated: true}, "evicted": {Terminated: true}, "gone": {Deleted: true},
	} {
		if got := s.PodState(uid); got != want {
			t.Errorf("PodState(%s) = %+v, want %+v", uid, got, want)
		}
	}
	if !s.AllSourcesReady() {
		t.Error("not ready after a list from every source")
	}
	if live := s.live(); len(live) != 1 || live[0].UID != "running" {
		t.Errorf("live = %v, want only the running pod", live)
	}
}

// gcFixture is a podGC over a real runc driver (with no containers), an image store
// holding one image and a log directory, all under a temporary directory.
type gcFixture struct {
	rt      *podRuntime
	gc      *podGC
	logs    string
	imageID string
	store   *images.Store
}

func newGCFixture(t *testing.T) *gcFixture {
	kerneltest.Require(t, kerneltest.Root, kerneltest.Runc)
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.PodLogsDir = filepath.Join(dir, "logs")
	cfg.ImageMinimumGCAge = metav1.Duration{}
	logger := slog.New(slog.DiscardHandler)
	store, err := images.Open(images.Options{Root: cfg.ImagesDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "unused.tar")
	tag, _ := name.NewTag("example.com/unused:v1")
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/sh")); err != nil {
		t.Fatal(err)
	}
	imported, err := store.Import(context.Background(), archive)
	if err != nil || len(imported) != 1 {
		t.Fatalf("import: %v, %v", imported, err)
	}
	driver, err := runc.New(runc.Config{Root: filepath.Join(dir, "runc"), StateDir: cfg.CheckpointsDir(),
		ShimCommand: []string{"/bin/false"}}, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	sup := pods.NewSupervisor(&pods.WorkerConfig{Runtime: driver, Images: pods.StoreImages{Store: store},
		PodsDir: cfg.PodsDir(), LogsDir: cfg.PodLogsDir, SandboxDir: filepath.Join(dir, "run"), Logger: logger}, nil)
	rt := &podRuntime{cfg: cfg, logger: logger, evicted: map[types.UID]bool{}}
	states := newGCPodStates(sup, rt.isEvicted)
	states.update(nil, true)
	g, err := newPodGC(cfg, sup, store, states, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	rt.gc.Store(g)
	return &gcFixture{rt: rt, gc: g, logs: cfg.PodLogsDir, imageID: imported[0].ID, store: store}
}

// deletedPodLogs writes the logs a deleted pod left and returns their directory.
func (f *gcFixture) deletedPodLogs(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(f.logs, "default_gone_gone-uid")
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app", "0.log"), []byte("2026-11-26T12:00:00Z stdout F bye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReclaimCollectsContainersThenEveryUnusedImage(t *testing.T) {
	f := newGCFixture(t)
	logDir := f.deletedPodLogs(t)
	// Far below kubelet's 85 %: only reclaim deletes the image.
	if res, err := f.gc.images.Collect(context.Background()); err != nil || len(res.Deleted) != 0 {
		t.Fatalf("periodic image GC = %+v, %v; want nothing deleted", res, err)
	}
	// A pod that may still start keeps its image.
	f.gc.states.update([]*corev1.Pod{gcTestPod("live", corev1.PodPending, "example.com/unused:v1")}, true)
	if _, err := f.rt.Reclaim(context.Background(), pressure.SignalImagefsAvailable); err != nil {
		t.Fatal(err)
	}
	if im, _ := f.store.Lookup(f.imageID); im == nil {
		t.Fatal("reclaim deleted the image of a pod that has not finished")
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("the deleted pod's logs survived reclaim: %v", err)
	}
	f.gc.states.update([]*corev1.Pod{gcTestPod("live", corev1.PodSucceeded, "example.com/unused:v1")}, true)
	freed, err := f.rt.Reclaim(context.Background(), pressure.SignalImagefsAvailable)
	if err != nil || freed < 0 {
		t.Fatalf("Reclaim = %d, %v", freed, err)
	}
	if im, _ := f.store.Lookup(f.imageID); im != nil {
		t.Error("reclaim kept an image no container or live pod uses")
	}
}

func TestDiskPressureRisingTriggersCollection(t *testing.T) {
	f := newGCFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	f.gc.run(ctx, &wg)
	logDir := f.deletedPodLogs(t)
	cond := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeDiskPressure, Status: s}}
	}
	f.rt.conditionsChanged(cond(corev1.ConditionFalse))
	if f.rt.diskPressure.Load() {
		t.Fatal("DiskPressure False recorded as True")
	}
	f.rt.conditionsChanged(cond(corev1.ConditionTrue))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(logDir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("DiskPressure rising did not start container GC within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
