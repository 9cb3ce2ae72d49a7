package staticpods

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeWatcher is a dirWatcher the test fires by hand.
type fakeWatcher struct{ events chan struct{} }

func (w *fakeWatcher) Events() <-chan struct{} { return w.events }
func (w *fakeWatcher) Close() error            { return nil }

type recordedEvents struct {
	mu     sync.Mutex
	events []*corev1.Event
}

func (r *recordedEvents) Create(_ context.Context, ev *corev1.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recordedEvents) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Name)
	}
	return out
}

func (r *recordedEvents) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// sourceHarness runs a Source over a temporary directory with a fake clock and a
// hand-fired watcher; reads tells the test each time the directory has been read.
type sourceHarness struct {
	t       *testing.T
	dir     string
	clock   *clocktesting.FakeClock
	watcher *fakeWatcher
	updates chan []*corev1.Pod
	reads   chan struct{}
	events  *recordedEvents
	reg     *prometheus.Registry
}

func startSource(t *testing.T, dir string) *sourceHarness {
	t.Helper()
	h := &sourceHarness{
		t: t, dir: dir,
		clock:   clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)),
		watcher: &fakeWatcher{events: make(chan struct{})},
		updates: make(chan []*corev1.Pod, 10),
		reads:   make(chan struct{}, 10),
		events:  &recordedEvents{},
		reg:     prometheus.NewRegistry(),
	}
	s, err := NewSource(SourceConfig{
		Dir: dir, NodeName: "node-a", CheckFrequency: 20 * time.Second,
		OnUpdate: func(pods []*corev1.Pod) { h.updates <- pods },
		Events:   h.events, Clock: h.clock, Registerer: h.reg,
		watch:     func(string) (dirWatcher, error) { return h.watcher, nil },
		afterRead: func() { h.reads <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	h.waitRead()
	return h
}

func (h *sourceHarness) waitRead() {
	h.t.Helper()
	select {
	case <-h.reads:
	case <-time.After(10 * time.Second):
		h.t.Fatal("the directory was not read")
	}
}

// update returns the set handed over by the last read, or nil and false if it handed
// nothing over.
func (h *sourceHarness) update() ([]*corev1.Pod, bool) {
	select {
	case pods := <-h.updates:
		return pods, true
	default:
		return nil, false
	}
}

func (h *sourceHarness) mustUpdate() []*corev1.Pod {
	h.t.Helper()
	pods, ok := h.update()
	if !ok {
		h.t.Fatal("no update after the read")
	}
	return pods
}

func (h *sourceHarness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *sourceHarness) notify() {
	h.watcher.events <- struct{}{}
	h.waitRead()
}

func (h *sourceHarness) tick() {
	h.clock.Step(20 * time.Second)
	h.waitRead()
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestSourceReadsManifests(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(etcdYAML), 0o644))
	must(os.WriteFile(filepath.Join(dir, "web.json"), []byte(webJSON), 0o644))
	must(os.WriteFile(filepath.Join(dir, ".web.json.swp"), []byte("garbage"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "web.json~"), []byte("garbage"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "being-written.yaml"), nil, 0o644))
	must(os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("apiVersion: v1\nkind: Pod\n"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "old"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "old", "x.yaml"), []byte(etcdYAML), 0o644))
	must(os.Symlink(filepath.Join(dir, "old", "x.yaml"), filepath.Join(dir, "linked.yaml")))

	h := startSource(t, dir)
	pods := h.mustUpdate()
	// linked.yaml is etcd again under another file name, so its pod name collides.
	if got := names(pods); !slices.Equal(got, []string{"default/web-node-a", "kube-system/etcd-node-a"}) {
		t.Fatalf("pods %v", got)
	}
	for _, p := range pods {
		if p.Annotations[AnnotationConfigSeen] != "2026-11-26T12:00:00Z" {
			t.Errorf("%s config.seen %q, want the first read's time", p.Name, p.Annotations[AnnotationConfigSeen])
		}
	}
	// An empty file is no pod and no error; broken.yaml and the duplicate are errors,
	// each in its own Event.
	msgs := h.events.messages()
	if len(msgs) != 2 || !strings.Contains(msgs[0], "broken.yaml: [metadata.name: Required value") ||
		!strings.Contains(msgs[1], "linked.yaml: pod kube-system/etcd-node-a is already defined by "+filepath.Join(dir, "etcd.yaml")) {
		t.Errorf("events %q, want one about broken.yaml and one about the duplicate name in linked.yaml", msgs)
	}
	if names := h.events.names(); len(names) != 2 || names[0] == names[1] {
		t.Errorf("event names %v, want two distinct", names)
	}
	if v := h.metric("plinth_static_pod_manifests_invalid"); v != 2 {
		t.Errorf("invalid manifests gauge %v, want 2", v)
	}
}

// metric is the value of the gauge or counter name in the harness's registry.
func (h *sourceHarness) metric(name string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	h.t.Fatalf("no metric %s", name)
	return 0
}

func TestSourceFollowsChanges(t *testing.T) {
	h := startSource(t, t.TempDir())
	if pods := h.mustUpdate(); len(pods) != 0 {
		t.Fatalf("an empty directory gave %v", names(pods))
	}

	h.write("web.json", webJSON)
	h.notify()
	pods := h.mustUpdate()
	if got := names(pods); !slices.Equal(got, []string{"default/web-node-a"}) {
		t.Fatalf("after adding web.json: %v", got)
	}
	firstUID := pods[0].UID

	// The periodic re-read of an unchanged directory hands nothing over and keeps
	// config.seen.
	h.tick()
	if pods, ok := h.update(); ok {
		t.Fatalf("an unchanged directory handed over %v", names(pods))
	}

	// A change the watcher missed is found by the periodic re-read.
	h.write("web.json", strings.Replace(webJSON, "web:1", "web:2", 1))
	h.tick()
	pods = h.mustUpdate()
	if len(pods) != 1 || pods[0].UID == firstUID || pods[0].Spec.Containers[0].Image != "registry.example/web:2" {
		t.Fatalf("after editing web.json: %+v", pods)
	}
	if seen := pods[0].Annotations[AnnotationConfigSeen]; seen != "2026-11-26T12:00:40Z" {
		t.Errorf("config.seen of the new version %q, want the read that found it", seen)
	}

	// A broken edit takes the pod away, is reported once, and is not fatal.
	h.write("web.json", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "web"}]}}`)
	h.notify()
	if pods := h.mustUpdate(); len(pods) != 0 {
		t.Fatalf("a broken manifest still runs %v", names(pods))
	}
	h.tick()
	if msgs := h.events.messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "InvalidStaticPodManifest: "+filepath.Join(h.dir, "web.json")+": spec.containers[0].image: Required value") {
		t.Errorf("events %q, want one naming the file and field", msgs)
	}
	if v := h.metric("plinth_static_pod_manifest_errors_total"); v != 1 {
		t.Errorf("errors counter %v, want 1 (reported once, not at every read)", v)
	}

	// Fixed again, and removed.
	h.write("web.json", webJSON)
	h.notify()
	if pods := h.mustUpdate(); len(pods) != 1 || pods[0].UID != firstUID {
		t.Fatalf("the first version back: %+v, want UID %s again", names(pods), firstUID)
	}
	if v := h.metric("plinth_static_pod_manifests_invalid"); v != 0 {
		t.Errorf("invalid manifests gauge %v after the fix, want 0", v)
	}
	if err := os.Remove(filepath.Join(h.dir, "web.json")); err != nil {
		t.Fatal(err)
	}
	h.notify()
	if pods := h.mustUpdate(); len(pods) != 0 {
		t.Fatalf("after removing web.json: %v", names(pods))
	}
}

func TestSourceDirectoryAppearsLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := startSource(t, dir)
	if pods := h.mustUpdate(); len(pods) != 0 {
		t.Fatalf("a missing directory gave %v", names(pods))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("web.json", webJSON)
	h.tick()
	if got := names(h.mustUpdate()); !slices.Equal(got, []string{"default/web-node-a"}) {
		t.Fatalf("after the directory appeared: %v", got)
	}
}

func TestNewSourceRefusesBadConfig(t *testing.T) {
	ok := func([]*corev1.Pod) {}
	for name, cfg := range map[string]SourceConfig{
		"relative dir": {Dir: "manifests", NodeName: "n", OnUpdate: ok},
		"no node":      {Dir: "/m", OnUpdate: ok},
		"no consumer":  {Dir: "/m", NodeName: "n"},
	} {
		if _, err := NewSource(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
